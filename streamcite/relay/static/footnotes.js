// Footnotes and spans: where each footnote goes in the answer text. Two sources of
// them: the [n] markers in the text (citation_ref events), and citation spans (answers
// with no [n] in the text: Anthropic, Gemini, Responses, Cohere), whose footnote follows
// the span's last character.

import { el } from "./dom.js";
import { codePointsToUtf16, isHighSurrogate, isLowSurrogate } from "./offsets.js";

const MARKER = /^\[(\d{1,4}(?:, *\d{1,4})*)\]/;

export function findMarkers(s) {
  const text = s.text;
  const map = codePointsToUtf16(text, s.refs.map((r) => r.offset));
  const byStart = new Map();
  for (const ref of s.refs) {
    const start = map.get(ref.offset);
    if (start === undefined || byStart.has(start)) continue;
    const m = MARKER.exec(text.slice(start, start + 40));
    if (!m) continue;
    const numbers = m[1].split(",").map((n) => Number(n.trim()));
    // "remote [1]." shows "remote¹.": the spaces before a marker go with it (the core's
    // superscript mode does the same), unless they start a line.
    let lead = start;
    while (lead > 0 && (text[lead - 1] === " " || text[lead - 1] === "\t")) lead -= 1;
    if (lead > 0 && text[lead - 1] === "\n") lead = start;
    byStart.set(start, { start: lead, at: start, end: start + m[0].length, numbers });
  }
  return [...byStart.values()].sort((a, b) => a.start - b.start);
}

// Footnotes of span-anchored citations (Anthropic, Gemini, Responses, Cohere answers have
// no [n] in the text): UTF-16 end of each span -> the footnote numbers shown there. A
// citation a [n] marker already shows is not repeated; a span past the text so far waits.
export function spanAnchors(s) {
  const at = new Map();
  if (!s.spans.length) return at;
  const marked = new Set(s.refs.map((r) => r.number));
  const chars = s.spans.filter((sp) => sp && !Number.isInteger(sp.end_utf16) && Number.isInteger(sp.end));
  const map = chars.length ? codePointsToUtf16(s.text, chars.map((sp) => sp.end)) : null;
  for (const sp of s.spans) {
    if (!sp || !Number.isInteger(sp.document_index) || sp.document_index < 0) continue;
    const c = s.citations[sp.document_index];
    const n = c && Number.isInteger(c.document_index) ? c.document_index + 1 : sp.document_index + 1;
    if (marked.has(n)) continue;
    let end = Number.isInteger(sp.end_utf16) ? sp.end_utf16 : map && map.get(sp.end);
    if (!Number.isInteger(end) || end <= 0 || end > s.text.length) continue;
    if (isLowSurrogate(s.text.charCodeAt(end)) && isHighSurrogate(s.text.charCodeAt(end - 1))) {
      end += 1; // never between the two halves of a character
    }
    if (!at.has(end)) at.set(end, []);
    if (!at.get(end).includes(n)) at.get(end).push(n);
  }
  return at;
}

export function spanFootnote(s, numbers) {
  const sup = footnote(s, { start: 0, end: 0, numbers });
  delete sup.dataset.marker;
  sup.dataset.span = "true";
  return sup;
}

function footnoteTarget(s, number) {
  if (s.citations.some((c) => c && c.document_index === number - 1)) return `cite-${s.id}-${number}`;
  if (s.sources.some((src) => src && String(src.quoted_as).trim() === String(number))) {
    return `wikit-${s.id}-${number}`;
  }
  return `cite-${s.id}-${number}`;
}

export function footnote(s, marker) {
  const sup = el("sup", "fn");
  sup.dataset.marker = s.text.slice(marker.at ?? marker.start, marker.end);
  marker.numbers.forEach((n, i) => {
    if (i) sup.appendChild(document.createTextNode(","));
    const a = el("a", null, String(n));
    a.href = "#" + footnoteTarget(s, n);
    a.dataset.footnote = String(n);
    a.setAttribute("aria-label", `source ${n}`);
    sup.appendChild(a);
  });
  return sup;
}

// A footnote never wraps alone onto the next line: the word before it and the footnote
// share one span that does not wrap (the word is taken from the text node just before).
export function keptWithWord(target, sup) {
  const prev = target.lastChild;
  if (!prev || prev.nodeType !== Node.TEXT_NODE) return sup;
  const m = /\S+$/u.exec(prev.data);
  if (!m) return sup;
  prev.data = prev.data.slice(0, m.index);
  const keep = el("span", "fn-keep");
  keep.append(document.createTextNode(m[0]), sup);
  return keep;
}
