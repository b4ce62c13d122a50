"""UI layer, the clinician console (Gradio, ``medhx chat``): may import all but agent.cli, which alone imports it.

A web app over durable interview sessions (``medhx chat``, ``python -m ui``).

``settings`` (the ``ui:`` config), ``auth`` (credentials and the login gate), ``presets`` (module selectors),
``console`` (sessions, turns and locks, apart from drawing), ``render`` (panels as HTML / markdown), ``layout`` (the
page's components), ``handlers`` (what each event does), ``app`` (the Blocks: events wired to handlers), ``api`` (the
same operations for scripts), ``server`` (FastAPI + uvicorn), ``launch`` (command-line options).
"""
