// Rendering the answer text: tokens go into a text node as they come; once per frame
// the whole text is rebuilt with its footnotes (footnotes.js) and claim tints (claims.js).

import { claimMark, claimRanges } from "./claims.js";
import { findMarkers, footnote, keptWithWord, spanAnchors, spanFootnote } from "./footnotes.js";
import { setLang } from "./lang.js";

export function queueRender(s) {
  if (s.renderQueued) return;
  s.renderQueued = true;
  // One full render per frame however many events arrive; timers when the tab is
  // hidden (animation frames pause there).
  const later = document.hidden ? (fn) => setTimeout(fn, 50) : requestAnimationFrame;
  later(() => {
    s.renderQueued = false;
    renderText(s);
  });
}

// The direction of a text: that of its first letter (Hebrew and Arabic read right to left).
function directionOf(text) {
  const m = /[A-Za-z\u00C0-\u024F\u0370-\u03FF\u0400-\u04FF\u0590-\u08FF]/.exec(text);
  return m && /[\u0590-\u08FF]/.test(m[0]) ? "rtl" : "ltr";
}

// The answer, its sources and passages follow the answer's direction (set once it has letters).
export function setDirection(s) {
  const answer = s.turn.text.closest(".answer");
  if (answer && !answer.dir && /\p{L}/u.test(s.text)) answer.dir = directionOf(s.text);
  // its language: from the first letters (cheap), or as the stream states it
  if (s.lang || s.text.length < 400 || !s.turn.text.hasAttribute("lang")) {
    setLang(s.turn.text, s.text, s.lang);
  }
}

function renderText(s) {
  const root = s.turn.text;
  const text = s.text;
  setDirection(s);
  const markers = findMarkers(s);
  const claims = claimRanges(s);
  const anchors = spanAnchors(s);
  const cuts = new Set([0, text.length]);
  for (const m of markers) cuts.add(m.start).add(m.end);
  for (const p of anchors.keys()) cuts.add(p);
  for (const c of claims) cuts.add(c.start).add(c.end);
  const points = [...cuts].sort((a, b) => a - b);
  const frag = document.createDocumentFragment();
  let mi = 0;
  let ci = 0;
  let mark = null;
  let markClaim = null;
  let prev = frag;
  for (let p = 0; p + 1 < points.length; p += 1) {
    const a = points[p];
    const b = points[p + 1];
    // a span's footnote follows its last character, in that character's element
    if (anchors.has(a)) prev.appendChild(spanFootnote(s, anchors.get(a)));
    while (ci < claims.length && claims[ci].end <= a) ci += 1;
    const claim = ci < claims.length && claims[ci].start <= a ? claims[ci] : null;
    let target = frag;
    if (claim) {
      if (markClaim !== claim) {
        mark = claimMark(claim.claim);
        frag.appendChild(mark);
        markClaim = claim;
      }
      target = mark;
    } else {
      markClaim = null;
    }
    prev = target;
    while (mi < markers.length && markers[mi].end <= a) mi += 1;
    const marker = mi < markers.length && markers[mi].start <= a ? markers[mi] : null;
    if (marker) {
      if (marker.start === a) target.appendChild(keptWithWord(target, footnote(s, marker)));
      continue;
    }
    target.appendChild(document.createTextNode(text.slice(a, b)));
  }
  if (anchors.has(text.length)) prev.appendChild(spanFootnote(s, anchors.get(text.length)));
  s.tail = document.createTextNode("");
  frag.appendChild(s.tail);
  root.replaceChildren(frag);
}
