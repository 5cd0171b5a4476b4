// Small DOM helpers shared by the page's modules. Text goes in with textContent only.

/** A new element with an optional class and text (set as textContent, never parsed). */
export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}
