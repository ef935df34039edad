"""Seeded filler prose: plausible, digit-free sentences that never carry an answer value.

Filler pads documents to realistic lengths. It is drawn from small per-register vocabularies that contain
no digits and no proper names, so that answer values (amounts, dates, names) occur only where a document
states them on purpose and page-level evidence stays minimal.
"""

from __future__ import annotations

import random

_OPENERS = (
    "",
    "",
    "",
    "In practice, ",
    "Where possible, ",
    "As a general rule, ",
    "In addition, ",
    "For this reason, ",
    "When questions arise, ",
    "Wherever practical, ",
    "At the same time, ",
)
_EXTRA_OPENERS = {
    "utility": ("Over the reporting period, ", "Throughout the year, ", "Despite a dry summer, "),
    "hospitality": ("Every season, ", "Since opening day, "),
    "legal": ("During your deliberations, ", "Before answering, "),
}

_CLOSERS = (
    "",
    "",
    "",
    " without undue delay",
    " in a consistent manner",
    " as circumstances require",
    " in line with established practice",
    " before any final decision is made",
    " on a regular schedule",
    " with appropriate documentation",
    " across all work areas",
)

_REGISTERS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "utility": (
        (
            "the operations team",
            "our field crews",
            "the engineering division",
            "staff at each facility",
            "the laboratory group",
            "the customer service office",
            "the board",
            "the asset management program",
        ),
        (
            "continued to monitor",
            "worked to improve",
            "carefully reviewed",
            "invested in",
            "coordinated",
            "documented",
            "strengthened",
            "upgraded",
        ),
        (
            "the reliability of the distribution system",
            "treatment processes and chemical feed equipment",
            "long-term planning for aging pipes",
            "communication with residential customers",
            "emergency preparedness procedures",
            "the condition of storage tanks and pump stations",
            "water conservation outreach",
            "the accuracy of customer meters",
        ),
    ),
    "workplace": (
        (
            "each employee",
            "supervisors",
            "the human resources team",
            "department managers",
            "new hires",
            "team members",
            "the company",
            "managers and staff alike",
        ),
        (
            "should respect",
            "should become familiar with",
            "must take responsibility for following",
            "will receive guidance on",
            "may request clarification about",
            "must take care to observe",
            "should feel free to discuss",
            "will be informed of",
        ),
        (
            "the procedures described in this section",
            "the standards of professional conduct",
            "the confidentiality of company information",
            "reasonable requests from customers",
            "safe work practices on the loading dock",
            "the expectations set out by their supervisor",
            "applicable laws and regulations",
            "the proper use of company equipment",
        ),
    ),
    "civic": (
        (
            "the applicant",
            "the permit holder",
            "the building division",
            "the contractor",
            "the property owner",
            "city staff",
            "the inspector of record",
            "the reviewing department",
        ),
        (
            "shall comply with",
            "must keep on site",
            "shall be responsible for",
            "will verify",
            "shall maintain",
            "must schedule",
            "shall observe",
            "will review",
        ),
        (
            "the approved plans and specifications",
            "all applicable building codes",
            "required setbacks from property lines",
            "erosion and sediment controls",
            "safe access for inspection staff",
            "the conditions listed on this permit",
            "the hours during which construction noise is allowed",
            "protection of public rights of way",
        ),
    ),
    "health": (
        ("the operator", "the person in charge", "management", "food employees", "the kitchen manager"),
        ("shall ensure", "must maintain", "should review", "will correct", "must document", "shall verify"),
        (
            "proper cold holding temperatures",
            "clean and sanitized food contact surfaces",
            "handwashing procedures with all staff",
            "records of employee food safety training",
            "labels on bulk ingredient containers",
            "the condition of refrigeration equipment",
        ),
    ),
    "school": (
        (
            "students",
            "small groups",
            "the teacher",
            "each lab team",
            "the class",
            "partners",
            "learners who finish early",
            "students needing support",
        ),
        (
            "will discuss",
            "will record observations about",
            "will compare",
            "will reflect on",
            "will explain",
            "will revisit",
            "will summarize",
            "may ask about",
        ),
        (
            "the key vocabulary of the unit",
            "patterns they notice in the data",
            "the purpose of the investigation",
            "how their results support a claim",
            "questions for the next lesson",
            "safety expectations in the lab",
            "connections to everyday experience",
            "sources of error in their measurements",
        ),
    ),
    "legal": (
        ("you", "the jury", "each juror", "the presiding juror", "the court", "the parties"),
        (
            "must consider",
            "should carefully weigh",
            "may not speculate about",
            "must base any answer on",
            "should disregard",
            "must agree upon",
        ),
        (
            "all of the evidence presented at trial",
            "the instructions given by the court",
            "the credibility of each witness",
            "the burden of proof described earlier",
            "any matter stricken from the record",
            "each question in the order presented",
        ),
    ),
    "hospitality": (
        ("our kitchen", "the chef", "our team", "the owner", "the bakery", "our head cook"),
        ("proudly prepares", "sources", "carefully selects", "changes", "celebrates", "serves"),
        (
            "seasonal produce from nearby growers",
            "fresh bread every morning",
            "dishes for sharing",
            "ingredients at their peak",
            "family recipes",
            "house made sauces and dressings",
        ),
    ),
    "career": (
        ("I", "the team I led", "our group", "my department"),
        ("delivered", "improved", "supported", "managed", "coordinated", "streamlined"),
        (
            "day to day operations",
            "regulatory reporting",
            "training for new staff",
            "process improvements",
            "cross functional projects",
            "preventive maintenance schedules",
        ),
    ),
}


def sentence(rng: random.Random, register: str) -> str:
    """One filler sentence from ``register``."""
    subjects, verbs, objects = _REGISTERS[register]
    opener = rng.choice(_OPENERS + _EXTRA_OPENERS.get(register, ()))
    text = f"{opener}{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}{rng.choice(_CLOSERS)}."
    return text[0].upper() + text[1:]


def paragraph(rng: random.Random, register: str, sentences: tuple[int, int] = (3, 5)) -> str:
    """A paragraph of ``sentences`` (inclusive range) filler sentences."""
    return " ".join(sentence(rng, register) for _ in range(rng.randint(*sentences)))
