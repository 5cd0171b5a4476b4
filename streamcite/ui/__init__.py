"""Cited answers in Python chat UIs: Gradio, Chainlit and Streamlit adapters.

``streamcite.ui.render`` is framework-neutral (no framework imported): it folds a
stream's events into a :class:`~streamcite.ui.render.ChatView` and renders it as
Markdown that every framework shows (footnotes as superscripts, a sources section with
each footnote's own quoted passage, claim marks ✓/✗, the grounding verdict, errors),
with all upstream text escaped so it renders as text. One module per framework turns
it into that framework's chat objects; each imports its framework, and is imported
only when used (``streamcite[gradio]``, ``streamcite[chainlit]``, ``streamcite[streamlit]``).
"""

__all__: list[str] = []
