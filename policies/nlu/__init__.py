"""NLU kinds that are not a bare LLM: the knowledge-based clinical NLU and the ensemble that merges an LLM's
grounded frames with it; and the doctor-utterance reader (``doctor_reader.py``), the clinical NLU's mirror image
for the doctor's side."""
