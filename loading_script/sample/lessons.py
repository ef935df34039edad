"""Cluster: science lesson plans of Oakridge Middle School (forms, materials lists, timing tables, rubrics)."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from madqa.loading_script.sample import answers as A
from madqa.loading_script.sample import utility
from madqa.loading_script.sample.layout import DocBuilder
from madqa.loading_script.sample.model import Cluster, render_cluster
from madqa.loading_script.sample.records import load_records
from madqa.loading_script.sample.text import paragraph

LEVELS = ("Exemplary", "Proficient", "Developing", "Beginning")
# A plan's pages: the form, materials and procedure, and the rubric (only where the lesson has one).
_FORM, _PROCEDURE, _RUBRIC = 1, 2, 3


@dataclass(frozen=True)
class Lesson:
    """One lesson plan; ``rubric`` rows are ``(criterion, points per level)`` (empty: no rubric page)."""

    slug: str
    teacher: str
    grade: str
    unit: str
    title: str
    date: dt.date
    minutes: int
    standard: str
    objectives: tuple[str, ...]
    materials: tuple[str, ...]
    procedure: tuple[tuple[str, int, str], ...]
    rubric: tuple[tuple[str, tuple[int, int, int, int]], ...] = ()
    note: str = ""

    @property
    def file(self) -> str:
        """File name, e.g. ``oakridge_lesson_plan_density_buoyancy.pdf``."""
        return f"oakridge_lesson_plan_{self.slug}.pdf"


LESSONS: tuple[Lesson, ...] = load_records("lessons", Lesson)


def _lesson(lesson: Lesson, rng: random.Random) -> DocBuilder:
    doc = DocBuilder(
        lesson.file,
        "Lesson plan",
        "Education",
        title=f"Lesson Plan: {lesson.title}",
        author=lesson.teacher,
        rng=rng,
        created=f"D:{lesson.date:%Y%m%d}070000Z",
    )
    page = doc.page()
    page.title("Oakridge Middle School", "Science Department - Lesson Plan")
    page.fields(
        [
            ("Teacher", lesson.teacher),
            ("Grade", lesson.grade),
            ("Unit", lesson.unit),
            ("Lesson", lesson.title),
            ("Date", A.date_text(lesson.date)),
            ("Time", f"{lesson.minutes} minutes"),
            ("Standard", lesson.standard),
        ],
        per_row=2,
        size=10.5,
    )
    page.heading("Learning objectives", size=11.5)
    page.bullets(lesson.objectives)
    page.heading("Background for the teacher", size=11.5)
    for _ in range(2):
        page.paragraph(paragraph(rng, "school", (3, 4)))
    page = doc.page()
    page.title(f"{lesson.title}: materials and procedure", size=15)
    page.heading("Materials", size=11.5)
    page.bullets(lesson.materials)
    page.heading("Procedure", size=11.5)
    page.table(
        ["Phase", "Minutes", "Activity"],
        [[p, str(m), a] for p, m, a in lesson.procedure],
        [120, 60, 324],
        size=10.5,
        right=(1,),
    )
    page.paragraph(paragraph(rng, "school", (2, 3)))
    if lesson.note:
        page.paragraph(lesson.note)
    if lesson.rubric:
        page = doc.page()
        page.title("Assessment rubric", f"{lesson.title} - points by performance level", size=15)
        rows = [[criterion, *[f"{p} pts" for p in points]] for criterion, points in lesson.rubric]
        page.table(["Criterion", *LEVELS], rows, [124, 95, 95, 95, 95], size=10.5)
        page.paragraph(paragraph(rng, "school", (3, 4)))
    return doc


def _minutes(lesson: Lesson, phase: str) -> int:
    """Minutes the procedure table gives ``phase``."""
    return next(minutes for name, minutes, _ in lesson.procedure if name == phase)


def _points(lesson: Lesson, criterion: str, level: str) -> int:
    """Points the rubric gives ``criterion`` at ``level`` (one of :data:`LEVELS`)."""
    return dict(lesson.rubric)[criterion][LEVELS.index(level)]


def build(seed: int) -> Cluster:
    """Build the five lesson plans and their questions."""
    cluster = render_cluster(seed, "lessons", _lesson, LESSONS)
    ask = cluster.ask
    density, water, plates, reactions, light = LESSONS

    # Each figure is printed on one page of its lesson plan: the helpers cite that page.
    def length(question: str, lesson: Lesson) -> None:
        ask(question, A.quantity_variants(str(lesson.minutes), "minutes", "min"), (lesson.file, _FORM))

    def phase_minutes(question: str, lesson: Lesson, phase: str) -> None:
        ask(question, A.quantity_variants(str(_minutes(lesson, phase)), "minutes", "min"), (lesson.file, _PROCEDURE))

    def rubric_points(question: str, lesson: Lesson, criterion: str, level: str) -> None:
        value = _points(lesson, criterion, level)
        ask(question, A.quantity_variants(str(value), "pts", "points"), (lesson.file, _RUBRIC))

    length("How long is Ms. Brooks's density and buoyancy lesson?", density)
    phase_minutes(
        "How much class time is set aside for the clay boat lab in the density lesson?", density, "Lab investigation"
    )
    rubric_points(
        "In the density lesson's rubric, how many points does proficient reasoning earn?",
        density,
        "Reasoning",
        "Proficient",
    )
    ask(
        "Which science standard does Ms. Brooks's water treatment lesson address?",
        A.text_variants(water.standard),
        (water.file, _FORM),
    )
    ask(
        "What filter layers do students need for the river-to-tap activity?",
        A.list_variants(["sand", "gravel", "activated charcoal"]),
        (water.file, _PROCEDURE),
    )
    phase_minutes(
        "How many minutes do teams spend building their filters in the water treatment lesson?", water, "Filter build"
    )
    ask(
        "Which grade is Mr. Reyes teaching in the plate tectonics lesson?",
        A.text_variants(plates.grade, "8th grade", "8"),
        (plates.file, _FORM),
    )
    ask(
        "What do students plot during the data analysis phase of the Moving Plates lesson?",
        A.text_variants("recent earthquakes", "earthquakes"),
        (plates.file, _PROCEDURE),
    )
    ask(
        "What are students asked to state on their exit ticket in the plate tectonics lesson?",
        A.text_variants("Three facts about boundaries", "three facts about plate boundaries"),
        (plates.file, _PROCEDURE),
    )
    ask(
        "What protective equipment is on the materials list for the chemical change lab?",
        A.text_variants("safety goggles", "goggles"),
        (reactions.file, _PROCEDURE),
    )
    rubric_points(
        "How many points can a student earn for safety at the exemplary level in the chemical reactions rubric?",
        reactions,
        "Safety",
        "Exemplary",
    )
    ask(
        "On what date is the chemical reactions lesson planned?",
        A.date_variants(reactions.date),
        (reactions.file, _FORM),
    )
    ask(
        "Which aquatic plant do students observe in the photosynthesis lesson?",
        A.text_variants("elodea"),
        (light.file, _PROCEDURE),
    )
    rubric_points(
        "How many points does a developing graph earn in the photosynthesis rubric?", light, "Graph", "Developing"
    )
    # cross-page
    explore = _minutes(light, "Explore")
    ask(
        "How long is the whole photosynthesis lesson, and how much of it is spent exploring bubble counts?",
        A.list_variants([f"{light.minutes} minutes", f"{explore} minutes"], [str(light.minutes), str(explore)]),
        (light.file, _FORM),
        (light.file, _PROCEDURE),
    )
    top = _points(density, "Data table", "Exemplary")
    ask(
        "Which standard does the density lesson target, and what is the highest score for its data table?",
        A.list_variants([density.standard, f"{top} pts"], [density.standard, f"{top} points"]),
        (density.file, _FORM),
        (density.file, _RUBRIC),
    )
    # cross-document
    both = [lesson for lesson in LESSONS if "graduated cylinders" in lesson.materials]
    ask(
        "Which Oakridge science lessons call for graduated cylinders?",
        A.list_variants([lesson.title for lesson in both]),
        *[(lesson.file, _PROCEDURE) for lesson in both],
    )
    ask(
        "According to the water utility's 2022 annual report, who manages the plant that Ms. Brooks's class "
        "is preparing to tour?",
        A.person_variants(utility.facility_manager(2022, "Cedar Creek Plant")),
        (water.file, _PROCEDURE),
        (utility.report_file(2022), utility.LEADERSHIP_PAGE),
    )
    return cluster
