// Small DOM helpers shared by the page's modules. Text goes in with textContent only.

/** A new element with an optional class and text (set as textContent, never parsed). */
export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/** A tool card's header: its kind, its name (`…` until known), then `extra` nodes (a
 * server's name), then its id. Returns the header and the name and id nodes. */
export function toolHead(kind, ...extra) {
  const head = el("header", "tool-head");
  head.appendChild(el("span", "tool-kind", kind));
  const name = el("code", "tool-name", "…");
  head.appendChild(name);
  for (const node of extra) head.appendChild(node);
  const id = el("span", "tool-id");
  head.appendChild(id);
  return { head, name, id };
}

/** Put `card` in `box` in the order of its tool index, whatever order the cards start
 * in: before the card of the next higher index in `cards` (index -> {card}), else before
 * `last` (null: at the end). */
export function placeByIndex(box, cards, index, card, last) {
  const later = [...cards.keys()].filter((k) => k > index).sort((a, b) => a - b);
  box.insertBefore(card, later.length ? cards.get(later[0]).card : last);
  box.hidden = false;
}
