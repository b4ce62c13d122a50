"""The clinician console: a Gradio web app over durable interview sessions (``medhx chat``, ``python -m ui``).

``settings`` (the ``ui:`` config), ``auth`` (credentials and the login gate), ``presets`` (module selectors),
``console`` (sessions, turns and locks, apart from drawing), ``render`` (panels as HTML / markdown), ``app`` (the
Blocks layout and handlers), ``server`` (FastAPI + uvicorn), ``launch`` (command-line options).
"""
