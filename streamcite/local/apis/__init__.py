"""The embedded backend's API emulations: one module per API it speaks.

OpenAI chat completions and Responses, Anthropic Messages, Gemini, Cohere v2, Wikit's quoted
sources, Google's ``:check`` and Azure's groundedness endpoints; :mod:`~.plan` (one answer
planned for any API), :mod:`~.stream` (its SSE bytes with faults), :mod:`~.routes` (the paths).
"""
