// Offsets: the stream counts code points (as Python does), the page's strings count
// UTF-16 units. These convert one to the other and never cut a character in two.

/** UTF-16 index of each code point offset in `offsets` (Python counts code points). */
export function codePointsToUtf16(text, offsets) {
  // only offsets that can be in a text: one negative would never be met, and every
  // offset after it would map to the end of the text
  const wanted = [...new Set(offsets)].filter((o) => Number.isInteger(o) && o >= 0).sort((a, b) => a - b);
  const out = new Map();
  let cp = 0;
  let u16 = 0;
  let i = 0;
  while (i < wanted.length) {
    if (wanted[i] === cp) {
      out.set(cp, u16);
      i += 1;
      continue;
    }
    if (u16 >= text.length) break;
    const code = text.codePointAt(u16);
    u16 += code > 0xffff ? 2 : 1;
    cp += 1;
  }
  for (; i < wanted.length; i += 1) out.set(wanted[i], text.length);
  return out;
}

export function isHighSurrogate(code) {
  return code >= 0xd800 && code <= 0xdbff;
}

export function isLowSurrogate(code) {
  return code >= 0xdc00 && code <= 0xdfff;
}
