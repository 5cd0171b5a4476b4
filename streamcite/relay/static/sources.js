// The sources panels: "Sources" (the citations, grouped by document, one passage per
// footnote) and "Retrieved passages" (what the search returned, Wikit's quoted sources).
// Links only for http(s) URLs; everything else is shown as inert text.

import { el } from "./dom.js";
import { setLang } from "./lang.js";

/** The URL as a link target when it is http(s), else null (javascript:, data:, ...). */
export function safeHref(url) {
  if (typeof url !== "string" || url.length > 4096) return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
  } catch {
    return null;
  }
}

// A passage is shown up to this many characters ("…" after): a provider may quote a
// whole document, and the panel is drawn again at every citations event.
export const MAX_PASSAGE_CHARS = 2000;

/** `text` cut at MAX_PASSAGE_CHARS (never inside a surrogate pair), with "…". */
export function clipPassage(text) {
  const s = String(text);
  if (s.length <= MAX_PASSAGE_CHARS) return s;
  let end = MAX_PASSAGE_CHARS;
  const code = s.charCodeAt(end);
  if (code >= 0xdc00 && code <= 0xdfff) end -= 1; // do not split a surrogate pair
  return s.slice(0, end).trimEnd() + "…";
}

function linkOrText(url, label, className) {
  const href = safeHref(url);
  if (href) {
    const a = el("a", className, label);
    a.href = href;
    a.rel = "noopener noreferrer";
    a.target = "_blank";
    return a;
  }
  const span = el("span", className, label);
  if (url) {
    span.title = "not a web link (not opened): " + String(url).slice(0, 200);
    span.classList.add("inert-link");
  }
  return span;
}

// -- Sources: one entry per cited passage, grouped by document --------------------------

export function renderCitations(s) {
  const box = s.turn.citations;
  box.replaceChildren();
  const groups = new Map();
  const extra = spanPassages(s);
  for (const c of s.citations) {
    if (!c || typeof c !== "object") continue;
    const key = [c.document_title, c.document_author, c.document_year, documentUrl(c.source_url)].join("\u0000");
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(c);
  }
  for (const items of groups.values()) {
    items.sort((a, b) => (a.document_index ?? 0) - (b.document_index ?? 0));
    const first = items[0];
    const doc = el("article", "doc");
    setLang(doc, items.map((c) => clipPassage([c.document_title, c.cited_text].join(" "))).join(" "), first.language);
    const h = el("h3", "doc-title");
    h.appendChild(linkOrText(documentUrl(first.source_url), first.document_title || "Untitled document", "doc-link"));
    doc.appendChild(h);
    const meta = [first.document_author, first.document_year].filter((x) => x !== null && x !== undefined && x !== "");
    if (meta.length) doc.appendChild(el("p", "doc-meta", meta.join(" · ")));
    const list = el("ol", "passages");
    for (const c of items) {
      const li = el("li", "passage");
      if (Number.isInteger(c.document_index)) {
        const n = c.document_index + 1;
        li.id = `cite-${s.id}-${n}`;
        // each passage links to its own place in the document (the URL's #chunk-N)
        li.appendChild(c.source_url ? linkOrText(c.source_url, `[${n}]`, "num") : el("span", "num", `[${n}]`));
      }
      if (c.cited_text_heading) li.appendChild(el("strong", "heading", c.cited_text_heading));
      if (c.cited_text) li.appendChild(el("blockquote", "cited", clipPassage(c.cited_text)));
      // the other passages the provider quoted from this source, one per footnote
      for (const text of extra.get(c.document_index) || []) {
        if (text !== (c.cited_text || "").trim()) li.appendChild(el("blockquote", "cited span-passage", clipPassage(text)));
      }
      if (c.document_reference) li.appendChild(el("span", "reference", `reference ${c.document_reference}`));
      list.appendChild(li);
    }
    doc.appendChild(list);
    box.appendChild(doc);
  }
  s.turn.sources.hidden = groups.size === 0;
  if (s.sources.length) renderWikit(s);
}

// Citation document_index -> the distinct passages its spans quote (a provider may cite one
// source several times, each time with its own passage), in the order they arrived.
const MAX_PASSAGES_PER_CITATION = 32;
function spanPassages(s) {
  const out = new Map();
  for (const sp of s.spans) {
    if (!sp || !Number.isInteger(sp.document_index) || typeof sp.cited_text !== "string") continue;
    const text = sp.cited_text.trim();
    if (!text) continue;
    if (!out.has(sp.document_index)) out.set(sp.document_index, []);
    const list = out.get(sp.document_index);
    if (list.length < MAX_PASSAGES_PER_CITATION && !list.includes(text)) list.push(text);
  }
  return out;
}

// A document's URL without the fragment that points at one passage (#chunk-N).
function documentUrl(url) {
  return typeof url === "string" ? url.split("#")[0] : url;
}

// -- Retrieved passages (Wikit's quoted sources) ----------------------------------------

// Passages arrive as the document's Markdown: show them as text, without the syntax.
function plainText(markdown) {
  return String(markdown)
    .replace(/^\s{0,3}#{1,6}\s+/gm, "")
    .replace(/(\*\*|__)(.+?)\1/g, "$2")
    .replace(/^\s*[-*+]\s+/gm, "• ");
}

function pageLabel(chunk) {
  const a = Number.isInteger(chunk.page_start) ? chunk.page_start + 1 : null;
  const b = Number.isInteger(chunk.page_end) ? chunk.page_end + 1 : null;
  if (a === null) return null;
  return b !== null && b !== a ? `pages ${a}–${b}` : `page ${a}`;
}

export function renderWikit(s) {
  const box = s.turn.wikitList;
  box.replaceChildren();
  const groups = new Map();
  let repeated = 0;
  for (const src of s.sources) {
    if (!src || typeof src !== "object" || !src.document) continue;
    const key = String(src.document.id);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(src);
  }
  for (const items of groups.values()) {
    const d = items[0].document;
    const doc = el("article", "doc");
    const sample = items.map((src) => clipPassage((src.chunk && src.chunk.data) || "")).join(" ");
    setLang(doc, [d.title || d.name || "", sample].join(" "), d.language);
    const h = el("h3", "doc-title");
    h.appendChild(linkOrText(d.url, d.title || d.name || d.id, "doc-link"));
    doc.appendChild(h);
    const ds = items[0].data_source;
    if (ds && (ds.name || ds.id)) doc.appendChild(el("p", "doc-meta", `data source: ${ds.name || ds.id}`));
    const list = el("ol", "passages");
    for (const src of items) {
      const li = el("li", "passage");
      const q = String(src.quoted_as).trim();
      if (/^\d{1,4}$/.test(q)) li.id = `wikit-${s.id}-${q}`;
      li.appendChild(el("span", "num", `[${q}]`));
      const chunk = src.chunk || {};
      const bits = [];
      const pages = pageLabel(chunk);
      if (pages) bits.push(pages);
      if (typeof src.score === "number") bits.push(`score ${src.score.toFixed(3)}`);
      if (chunk.id) bits.push(`chunk ${chunk.id}`);
      if (bits.length) li.appendChild(el("span", "chunk-meta", bits.join(" · ")));
      const cit = citedAs(s, src);
      if (cit) {
        // The Sources panel above quotes this passage: point there, do not repeat it.
        repeated += 1;
        const n = cit.document_index + 1;
        const same = el("a", "same-as", `quoted under Sources [${n}]`);
        same.href = `#cite-${s.id}-${n}`;
        li.appendChild(same);
      } else if (chunk.data) {
        li.appendChild(el("blockquote", "cited", plainText(clipPassage(chunk.data))));
      }
      list.appendChild(li);
    }
    doc.appendChild(list);
    box.appendChild(doc);
  }
  s.turn.wikit.hidden = groups.size === 0;
  s.turn.wikit.dataset.repeated = String(repeated);
}

const squash = (text) => String(text).replace(/\s+/g, " ").trim().toLowerCase();

// The citation that quotes the same passage as a retrieved one (same footnote, and the
// same words, or the same document when the citation quotes nothing), or null: its text
// is shown once, under Sources.
function citedAs(s, src) {
  const q = String(src.quoted_as).trim();
  if (!/^\d{1,4}$/.test(q)) return null;
  const n = Number(q);
  const cit = s.citations.find((c) => c && c.document_index === n - 1);
  if (!cit) return null;
  const data = src.chunk && src.chunk.data ? squash(plainText(src.chunk.data)) : "";
  if (cit.cited_text && data) {
    const cited = squash(cit.cited_text);
    return data.includes(cited) || cited.includes(data) ? cit : null;
  }
  const d = src.document;
  const same = cit.document_title === (d.title || d.name) || documentUrl(cit.source_url) === documentUrl(d.url);
  return same ? cit : null;
}
