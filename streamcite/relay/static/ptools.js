// Tools the provider runs itself (web search, web fetch, code execution, an MCP
// server's tool): one small card each, in the order of their tool_index — the tool's
// name, its input (clipped), then its status and a short summary once the result
// arrives. All of it is upstream text: textContent only; links only http(s) (safeHref).

import { el, placeByIndex, toolHead } from "./dom.js";
import { safeHref } from "./sources.js";

export const MAX_PROVIDER_TOOLS = 64; // cards per answer; the rest are counted, not shown
const INPUT_MAX = 300; // characters of the input shown
const OUTPUT_MAX = 200; // characters of a code run's output shown
const LINKS_MAX = 5; // result links shown per card

function clip(text, limit) {
  const s = String(text);
  return s.length <= limit ? s : s.slice(0, limit - 1) + "…";
}

/** Per-stream state (kept on the stream object). */
export function newProviderTools() {
  return { cards: new Map(), hidden: 0, note: null };
}

function countHidden(s) {
  const p = s.ptools;
  p.hidden += 1;
  if (!p.note) {
    p.note = el("p", "ptool-more");
    s.turn.ptools.appendChild(p.note);
  }
  p.note.textContent = `${p.hidden} more provider tool event${p.hidden === 1 ? "" : "s"} not shown`;
}

function newCard(s, index) {
  const card = el("article", "provider-tool");
  card.dataset.toolIndex = String(index);
  card.dataset.phase = "call";
  const server = el("span", "ptool-server");
  server.hidden = true;
  const { head, name, id } = toolHead("provider tool", server);
  card.appendChild(head);
  const input = el("pre", "ptool-input");
  input.hidden = true;
  card.appendChild(input);
  const result = el("p", "ptool-result", "running…");
  card.appendChild(result);
  const output = el("pre", "ptool-output");
  output.hidden = true;
  card.appendChild(output);
  const links = el("ul", "ptool-links");
  links.hidden = true;
  card.appendChild(links);
  const cards = s.ptools.cards;
  placeByIndex(s.turn.ptools, cards, index, card, s.ptools.note);
  const t = { id: null, name: null, server: null, input: null, status: null, summary: null };
  Object.assign(t, { card, name_: name, server_: server, id_: id, input_: input });
  Object.assign(t, { result_: result, output_: output, links_: links });
  cards.set(index, t);
  return t;
}

/** The telling part of a result: `3 results`, `exit 0`, `error (max_uses_exceeded)`. */
export function resultLine(status, summary) {
  const s = summary && typeof summary === "object" ? summary : {};
  const st = typeof status === "string" && status ? status : "done";
  const bits = [st];
  if (typeof s.error_code === "string") bits.push(`(${clip(s.error_code, 60)})`);
  if (Number.isInteger(s.count)) bits.push(`· ${s.count} result${s.count === 1 ? "" : "s"}`);
  if (Number.isInteger(s.return_code)) bits.push(`· exit ${s.return_code}`);
  return bits.join(" ");
}

function resultOutput(summary) {
  if (!summary || typeof summary !== "object") return "";
  for (const key of ["stdout", "output", "stderr", "content", "text"]) {
    const v = summary[key];
    if (typeof v === "string" && v.trim()) return clip(v.replace(/\s+$/, ""), OUTPUT_MAX);
  }
  return "";
}

function resultLinks(summary) {
  if (!summary || typeof summary !== "object") return [];
  const rows = Array.isArray(summary.results) ? summary.results.slice(0, LINKS_MAX) : [];
  if (typeof summary.url === "string") rows.unshift({ url: summary.url });
  const out = [];
  for (const r of rows) {
    if (!r || typeof r !== "object") continue;
    const href = safeHref(r.url);
    if (!href) continue;
    const label = typeof r.title === "string" && r.title.trim() ? r.title : r.url;
    out.push({ href, label: clip(label, 120) });
  }
  return out.slice(0, LINKS_MAX);
}

function showResult(t) {
  t.card.dataset.phase = "result";
  t.card.dataset.status = typeof t.status === "string" ? t.status : "";
  t.result_.textContent = resultLine(t.status, t.summary);
  const output = resultOutput(t.summary);
  t.output_.hidden = !output;
  t.output_.textContent = output;
  const links = resultLinks(t.summary);
  t.links_.replaceChildren();
  for (const { href, label } of links) {
    const li = el("li");
    const a = el("a", "ptool-link", label);
    a.href = href;
    a.rel = "noopener noreferrer";
    a.target = "_blank";
    li.appendChild(a);
    t.links_.appendChild(li);
  }
  t.links_.hidden = !links.length;
}

/** A `provider_tool` event: a call starts a card, its result completes it. */
export function onProviderTool(s, ev) {
  const index = Number.isInteger(ev.tool_index) && ev.tool_index >= 0 ? ev.tool_index : 0;
  let t = s.ptools.cards.get(index);
  if (!t) {
    if (s.ptools.cards.size >= MAX_PROVIDER_TOOLS) {
      countHidden(s);
      return;
    }
    t = newCard(s, index);
  }
  if (typeof ev.name === "string" && ev.name) {
    t.name = ev.name;
    t.name_.textContent = clip(ev.name, 120);
  }
  if (typeof ev.server === "string" && ev.server) {
    t.server = ev.server;
    t.server_.textContent = `(${clip(ev.server, 80)})`;
    t.server_.hidden = false;
  }
  if (typeof ev.id === "string" && ev.id) {
    t.id = ev.id;
    t.id_.textContent = clip(ev.id, 80);
  }
  if (typeof ev.input === "string" && ev.input) {
    t.input = ev.input;
    t.input_.textContent = clip(ev.input, INPUT_MAX);
    t.input_.hidden = false;
  }
  if (ev.phase === "result") {
    t.status = typeof ev.status === "string" ? ev.status : null;
    t.summary = ev.summary && typeof ev.summary === "object" ? ev.summary : null;
    showResult(t);
  } else if (typeof ev.status === "string" && ev.status) {
    t.result_.textContent = `${clip(ev.status, 60)}…`;
  }
}

/** The stream is done: the answer's list fills in only when no event carried them. */
export function settleProviderTools(s, final) {
  if (s.ptools.cards.size || !Array.isArray(final)) return;
  for (const ev of final.slice(0, 2 * MAX_PROVIDER_TOOLS)) {
    if (ev && typeof ev === "object") onProviderTool(s, ev);
  }
}

/** What the tests and debugging see of the cards. */
export function providerToolsView(s) {
  return [...s.ptools.cards.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([index, t]) => ({
      index,
      id: t.id,
      name: t.name,
      server: t.server,
      input: t.input,
      status: t.status,
      phase: t.card.dataset.phase,
    }));
}
