// The language of a message, for its `lang` attribute (screen readers pick their voice,
// browsers their hyphenation and quotes by it).
//
// A language the stream states wins (a valid BCP 47 tag). Otherwise only scripts that
// belong to one language are recognised: Hebrew letters mean `he`, Greek `el`, and so
// on. Latin, Cyrillic, Arabic or Han text could be many languages, and a wrong `lang`
// is worse than none, so it stays unknown: `lang=""`, which also keeps the text from
// inheriting the page's own `lang="en"` (the English of its buttons and labels).

const TAG = /^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8}){0,3}$/;
const LETTER = /\p{L}/gu;
const SAMPLE = 400; // characters looked at: enough to tell, cheap on every render

// script -> language, only where the script is (practically) one language's
const SCRIPTS = [
  [/\p{Script=Hebrew}/u, "he"],
  [/\p{Script=Greek}/u, "el"],
  [/\p{Script=Armenian}/u, "hy"],
  [/\p{Script=Georgian}/u, "ka"],
  [/\p{Script=Hangul}/u, "ko"],
  [/[\p{Script=Hiragana}\p{Script=Katakana}]/u, "ja"],
  [/\p{Script=Thai}/u, "th"],
  [/\p{Script=Han}/u, "han"], // Chinese or Japanese: told apart by kana below
];

/** A stated language tag when it is one, else null. */
export function statedLanguage(value) {
  return typeof value === "string" && TAG.test(value) ? value : null;
}

/**
 * The language code of `text` from its script ("" when unknown): the language of the
 * script most of its first letters are written in, if that script has just one.
 */
export function languageOf(text) {
  if (typeof text !== "string") return "";
  const letters = text.slice(0, SAMPLE).match(LETTER);
  if (!letters) return "";
  const counts = new Map();
  for (const ch of letters) {
    let code = "?"; // a letter of another script (Latin, Cyrillic, Arabic, Han...)
    for (const [re, lang] of SCRIPTS) {
      if (re.test(ch)) {
        code = lang;
        break;
      }
    }
    counts.set(code, (counts.get(code) || 0) + 1);
  }
  let best = "?";
  let bestCount = 0;
  for (const [code, n] of counts) {
    if (n > bestCount) {
      best = code;
      bestCount = n;
    }
  }
  // Kanji with some kana is Japanese; Han alone stays unknown (Chinese or Japanese).
  if (best === "han") return counts.has("ja") ? "ja" : "";
  return best === "?" ? "" : best;
}

/** Set `node.lang` to the stated language, else to the one `text` is written in. */
export function setLang(node, text, stated) {
  const lang = statedLanguage(stated) ?? languageOf(text);
  if (node.lang !== lang || !node.hasAttribute("lang")) node.lang = lang;
  return lang;
}
