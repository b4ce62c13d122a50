"""CMAS in words: how prompts describe intents, slots, attributes and statuses, and how clinician notes label
symptom attributes.

Why apart from :mod:`agent.core.cmas`: the schema decides what is valid; this module only words it. The prompt
texts follow the MediTOD paper's Appendix F prompts (their descriptions and examples), the note labels the
history of presenting complaint a clinician reads. Changing a wording here changes prompts and notes, never what
parses.
"""

from __future__ import annotations

INTENT_DESCRIPTIONS: dict[str, str] = {
    "inform": "The patient is providing information to the doctor.",
    "chit-chat": "The speaker is chit-chatting.",
    "nod_prompt_salutations": "The speaker is nodding or delivering salutations.",
    "inquire": "The doctor is inquiring information from the patient.",
    "diagnosis": "The doctor is making a diagnosis.",
    "other": "Any other action.",
}


SLOT_DESCRIPTIONS: dict[str, str] = {
    "symptom": "A symptom relevant to the patient's condition.",
    "medical_history": "A medical condition relevant to the patient's medical history.",
    "family_history": "A medical condition relevant to the patient's family.",
    "habit": "An habitual activity such as smoking, alcoholism, etc.",
    "exposure": "An environmental/chemical factor such as asbestos, pets, etc.",
    "medication": "A medication.",
    "medical_test": "A medical test.",
    "disease": "A medical condition.",
    "travel": "Information regarding the patient's recent travels.",
    "occupation": "Information regarding the patient's occupation.",
    "residence": "Information regarding patient's living conditions.",
    "basic_information": "Basic information about the patient.",
}


_LAY = ["laying down", "sleeping"]


_CHAR = ["sharp", "burning"]


# (description, examples) per slot and attribute, after Appendix F; attributes the paper does not
# describe get a generic description (see :func:`_attribute_entry`).
ATTRIBUTE_DESCRIPTIONS: dict[str, dict[str, tuple[str, list[str] | None]]] = {
    "symptom": {
        "value": ("The symptom in medical terms.", ["coughing", "dyspnea"]),
        "onset": ("When did this symptom appear?", ["three days ago", "one week back"]),
        "initiation": ("How did this symptom appear?", ["abruptly", "gradually"]),
        "location": ("Where is the symptom located?", ["back", "neck"]),
        "duration": ("How long does the symptom persist?", ["a few minutes", "a few hours"]),
        "severity": ("What is the severity of this symptom on a scale of 10?", ["4", "7"]),
        "progression": ("How is the symptom's progression?", ["getting worse", "constant"]),
        "frequency": ("Frequency, if applicable, to the symptom.", ["3-4 times a day", "every hour"]),
        "positive_characteristics": ("A characteristic positively associated with the symptom.", _CHAR),
        "negative_characteristics": ("A characteristic not associated with the symptom.", _CHAR),
        "unknown_characteristics": ("A characteristic with unknown relation with the symptom.", _CHAR),
        "alleviating_factor": ("A condition that alleviates the symptom.", _LAY),
        "not_alleviating_factor": ("A condition that does not alleviate the symptom.", _LAY),
        "aggravating_factor": ("A condition that aggravates the symptom.", _LAY),
        "not_aggravating_factor": ("A condition that does not aggravate the symptom.", _LAY),
        "not_alleviating_aggravating_factor": ("A condition that neither alleviates nor aggravates the symptom.", _LAY),
        "unknown_factor": ("A condition with unknown alleviation/aggravation status.", _LAY),
        "volume": ("Volume, if applicable to the symptom.", ["couple of teaspoons"]),
        "color": ("Color, if applicable to the symptom.", ["pink", "red"]),
        "itching": ("How severe is the itching on a scale of 10?", ["4", "7"]),
        "lesion_size": ("Is the lesion (or are the lesions) larger than 1cm (Yes/No)?", None),
        "lesions_peel_off": ("Do the lesions peel off (Yes/No)?", None),
        "rash_swollen": ("Is the rash swollen (Yes/No)?", None),
        "characteristics": ("Characteristics of the symptom (asked about as a group).", _CHAR),
        "ana_factors": ("Alleviating or aggravating factors of the symptom (asked about as a group).", _LAY),
    },
    "medical_history": {
        "value": ("Name of the medical condition.", ["hypertensive disease", "malignant neoplasm"]),
        "starting": ("When did the patient start to experience the condition?", ["since teenage", "ten years ago"]),
        "frequency": (
            "How frequently does the patient experience the added condition?",
            ["every year", "during summer"],
        ),
    },
    "family_history": {
        "value": ("Name of the medical condition.", ["hypertensive disease", "malignant neoplasm"]),
        "relation": ("Relationship with the patient", ["mother", "aunt"]),
    },
    "habit": {
        "value": ("Name of an activity.", ["smoking", "marijuana"]),
        "starting": ("When did the patient pick up the activities?", ["ten years back", "as a child"]),
        "frequency": ("How frequently does the patient engage in the selected activity?", ["on weekends", "every day"]),
    },
    "exposure": {
        "value": ("Name of an environmental factor.", ["pets", "dust"]),
        "where": ("Where was the patient exposed to the selected factor?", ["work", "home"]),
        "when": ("When was the patient exposed to the selected factor?", ["four days ago"]),
    },
    "medication": {
        "value": ("Name of a medication.", ["over-the-counter medicine", "paracetamol"]),
        "start": ("Since when did the patient start taking the medication?", ["few weeks ago", "two days back"]),
        "impact": ("Did the medication help the patient (Yes/No/Maybe)?", None),
        "respone_to": ("For which condition/symptom is medication for?", ["hypertensive disease", "diabetes"]),
        "frequency": ("How frequently does the patient take the medication?", ["daily"]),
    },
    "medical_test": {
        "value": ("Name of a medical test.", ["chest X-ray", "electrocardiogram"]),
        "when": ("When did the patient had the medical test done?", ["yesterday", "a week ago"]),
    },
    "disease": {"value": ("Name of the medical condition", ["viral pneumonia", "common cold"])},
    "travel": {
        "destination": ("Where has the patient travelled to?", ["canada", "united states"]),
        "date": ("When did the patient travel?", ["last week", "a year ago"]),
    },
    "occupation": {
        "value": ("Job/occupation of the patient.", ["nurse", "student"]),
        "exposure": (
            "Are there any hazards/substances/dangers to which the patient got exposed at work?",
            ["chemical fumes", "dust"],
        ),
    },
    "residence": {
        "value": ("Place where the patient resides.", ["apartment", "old building"]),
        "household_size": ("Size of the patient's household.", ["2", "4"]),
    },
    "basic_information": {
        "age": ("Age of the patient.", ["32", "50"]),
        "gender": ("Gender of the patient.", ["male", "female"]),
        "name": ("Name of the patient.", ["John", "Lily"]),
    },
}


# What each status means, per slot, after Appendix F (the paper's wording for the status attribute).
STATUS_MEANINGS: dict[str, str] = {
    "symptom": "the patient has the symptom currently",
    "medical_history": "the patient experienced the medical condition",
    "family_history": "someone in the patient's family suffered from the medical condition",
    "habit": "the patient engages in the activity habitually",
    "exposure": "the patient was exposed to the factor",
    "medication": "the patient took the medicine",
    "medical_test": "the patient took the test",
    "disease": "the patient has the condition",
    "travel": "the patient travelled recently",
    "occupation": "the patient works/worked at the above occupation",
    "residence": "the patient is currently living at the place",
}


SYMPTOM_ATTRS: tuple[tuple[str, str], ...] = (
    ("onset", "onset:"), ("initiation", "came on"), ("location", "location:"), ("duration", "duration:"),
    ("frequency", "frequency:"), ("positive_characteristics", "character:"),
    ("negative_characteristics", "not"), ("unknown_characteristics", "unsure if"),
    ("severity", "severity:"), ("progression", "progression:"),
    ("aggravating_factor", "worse with"), ("alleviating_factor", "better with"),
    ("not_aggravating_factor", "not worse with"), ("not_alleviating_factor", "not better with"),
    ("not_alleviating_aggravating_factor", "no effect of"), ("unknown_factor", "unsure about"),
    ("volume", "volume:"), ("color", "colour:"), ("itching", "itching:"), ("lesion_size", "lesion size:"),
    ("lesions_peel_off", "lesions peel off:"), ("rash_swollen", "rash swollen:"),
)


NOTE_NAMES: dict[str, str] = {
    # MediTOD files any drinking under "alcohol abuse"; a note that says so of two glasses a week misleads
    "alcohol abuse": "alcohol use",
    "regular coffee tea": "coffee or tea",
    "regular energy drinks": "energy drinks",
    "sick person": "contact with someone unwell",
    "noacs": "direct oral anticoagulant (DOAC)",
    "colored/excess sputum": "sputum",
    "weak limbs": "limb weakness",
    "secondhand cigarette": "second-hand smoke",  # the annotation guide's value for someone else's cigarettes
}
"""How the clinician's note names a value whose vocabulary spelling would mislead or puzzle a clinician reading it;
the state, the exports and the metrics keep the vocabulary's value."""


def note_name(value: object) -> str:
    """The name a clinician's note gives ``value`` (:data:`NOTE_NAMES`, else the value itself)."""
    return NOTE_NAMES.get(str(value), str(value))
