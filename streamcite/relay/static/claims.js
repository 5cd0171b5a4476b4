// Claims: the answer's sentences tinted by how well the sources support them (live
// claim events while the answer streams, then the grounding event's claims), and the
// support score shown next to the status.

import { el } from "./dom.js";
import { codePointsToUtf16 } from "./offsets.js";

export function claimRanges(s) {
  const g = s.grounding;
  // The grounding event's claims once it came; the live claim events until then.
  const source = g && Array.isArray(g.claims) && g.claims.length ? g.claims : s.claims;
  const len = s.text.length;
  const out = [];
  for (const c of source) {
    if (!c || typeof c !== "object") continue;
    let start = c.start_utf16;
    let end = c.end_utf16;
    if (!Number.isInteger(start) || !Number.isInteger(end)) {
      if (!Number.isInteger(c.start) || !Number.isInteger(c.end)) continue;
      const map = codePointsToUtf16(s.text, [c.start, c.end]);
      start = map.get(c.start);
      end = map.get(c.end);
    }
    start = Math.max(0, Math.min(start, len));
    end = Math.max(start, Math.min(end, len));
    if (end > start) out.push({ start, end, claim: c });
  }
  out.sort((a, b) => a.start - b.start);
  // Claims do not overlap in either API; if they ever do, the earlier one wins.
  const kept = [];
  for (const r of out) if (!kept.length || r.start >= kept[kept.length - 1].end) kept.push(r);
  return kept;
}

function supportClass(claim) {
  if (claim.grounding_check_required === false) return "neutral";
  const live = claim.type === "claim"; // a claim event: its own verdict
  if (live && typeof claim.supported !== "boolean") return "neutral";
  const score = typeof claim.score === "number" ? claim.score : null;
  if (score === null) {
    if (live) return claim.supported ? "supported" : "unsupported";
    return Array.isArray(claim.citation_indices) && claim.citation_indices.length
      ? "supported"
      : "unsupported";
  }
  if (live && claim.supported === false) return "unsupported";
  if (score >= 0.7) return "supported";
  if (score >= 0.4) return "weak";
  return "unsupported";
}

function claimTitle(claim) {
  if (claim.type === "claim") {
    const by = `checked by ${String(claim.checker)}`;
    if (typeof claim.supported !== "boolean") return `${by}: no check needed`;
    const score = typeof claim.score === "number" ? ` (support score ${claim.score.toFixed(2)})` : "";
    return `${by}: ${claim.supported ? "supported" : "not supported by the sources"}${score}`;
  }
  const parts = [];
  if (claim.grounding_check_required === false) parts.push("no check needed");
  if (typeof claim.score === "number") parts.push(`support score ${claim.score.toFixed(2)}`);
  const cited = Array.isArray(claim.citation_indices) ? claim.citation_indices : [];
  parts.push(cited.length ? `supported by ${cited.length} cited chunk(s)` : "no supporting source");
  return parts.join(" — ");
}

/** The <mark> that tints one claim's text (its class says how well it is supported). */
export function claimMark(claim) {
  const mark = el("mark", "claim " + supportClass(claim));
  mark.title = claimTitle(claim);
  if (claim.type === "claim") mark.dataset.checker = String(claim.checker);
  if (typeof claim.score === "number") mark.dataset.score = String(claim.score);
  return mark;
}

export function renderSupport(s) {
  const g = s.grounding;
  const node = s.turn.support;
  if (g && g.support_score == null && typeof g.reason === "string") {
    // No verdict (nothing to check against): "not checked", never a red mark.
    node.hidden = false;
    node.textContent = "not checked";
    node.title = `grounding check (${String(g.provider)}): ${g.reason.slice(0, 200)}`;
    node.dataset.level = "neutral";
    return;
  }
  if (!g || typeof g.support_score !== "number") {
    node.hidden = true;
    return;
  }
  node.hidden = false;
  node.dataset.score = String(g.support_score);
  const claims = Array.isArray(g.claims) ? g.claims : [];
  const checked = claims.filter((c) => c.grounding_check_required !== false);
  if (g.nothing_to_check === true || (g.nothing_to_check == null && !checked.length)) {
    // No claim needed a check: the score (1.0) says nothing about support.
    node.textContent = "nothing to check";
    node.title = `grounding check (${String(g.provider)}): no claim needed a check`;
    node.dataset.level = "neutral";
    return;
  }
  const failed = typeof g.unsupported_claims === "number"
    ? g.unsupported_claims
    : checked.filter((c) => !(Array.isArray(c.citation_indices) && c.citation_indices.length)).length;
  let level = supportClass({ score: g.support_score });
  if (failed && level === "supported") level = "weak"; // never green when a claim fails
  node.textContent = `support ${Math.round(g.support_score * 100)}%` + (failed ? ` · ${failed} unsupported` : "");
  node.title = `grounding check (${String(g.provider)}): support score ${g.support_score.toFixed(3)}`;
  node.dataset.level = level;
}
