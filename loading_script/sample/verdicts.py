"""Cluster: special verdict forms of three civil jury trials in Harlan County Superior Court.

The jury's yes/no findings exist only as drawn ticks; damages sit in a ruled table. One signature page is
a scan. A bridging question leads from a verdict to the defendant's employee handbook.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass

from madqa.loading_script.sample import answers as A
from madqa.loading_script.sample import handbook
from madqa.loading_script.sample.layout import ITALIC, DocBuilder
from madqa.loading_script.sample.model import Cluster, render_cluster
from madqa.loading_script.sample.records import load_records
from madqa.loading_script.sample.text import paragraph

DAMAGE_ROWS = (
    "Past medical expenses",
    "Future medical expenses",
    "Past lost earnings",
    "Past and future pain and suffering",
)

# A form's pages: questions 1-2 (negligence) with the caption, then questions 3-4 (fault shares and damages).
_LIABILITY, _DAMAGES = 1, 2


@dataclass(frozen=True)
class Verdict:
    """One special verdict; ``damages`` empty when the jury found no negligence."""

    slug: str
    case_no: str
    plaintiff: str
    defendant: str
    negligent: bool
    fault: tuple[int, int]  # defendant %, plaintiff %
    damages: tuple[int, ...]
    malice: bool
    presiding: str
    signed: dt.date
    scanned_last: bool = False

    @property
    def file(self) -> str:
        """File name, e.g. ``harlan_superior_court_verdict_alvarez_v_brightline.pdf``."""
        return f"harlan_superior_court_verdict_{self.slug}.pdf"

    @property
    def caption(self) -> str:
        """``Plaintiff v. Defendant``."""
        return f"{self.plaintiff} v. {self.defendant}"


VERDICTS: tuple[Verdict, ...] = load_records("verdicts", Verdict)


def _verdict(verdict: Verdict, rng: random.Random) -> DocBuilder:
    doc = DocBuilder(
        verdict.file,
        "Verdict form",
        "Legal",
        title=f"{verdict.caption} - Special Verdict",
        author="Harlan County Superior Court",
        rng=rng,
        footer="Special Verdict | Page {page} of {pages}",
        created=f"D:{verdict.signed:%Y%m%d}170000Z",
    )
    page = doc.page()
    page.title("Superior Court of the State, County of Harlan", "Civil Division", center=True, size=15)
    page.fields(
        [("Plaintiff", verdict.plaintiff), ("Defendant", verdict.defendant), ("Case No.", verdict.case_no)],
        size=10.5,
        label_width=70,
    )
    page.line("SPECIAL VERDICT FORM", size=13, bold=True, center=True, gap=10)
    page.paragraph(
        "We, the jury in the above case, answer the questions submitted to us as follows. "
        + paragraph(rng, "legal", (2, 3)),
        size=10.5,
    )
    page.checkboxes(
        f"Question 1. Was {verdict.defendant} negligent?",
        ("Yes", "No"),
        ["Yes" if verdict.negligent else "No"],
        size=10.5,
    )
    page.paragraph(
        "If you answered No to Question 1, stop here, answer no further questions, and have the presiding "
        "juror sign and date this form.",
        size=10,
        font=ITALIC,
        tag=None,
    )
    page.checkboxes(
        f"Question 2. Was that negligence a substantial factor in causing harm to {verdict.plaintiff}?",
        ("Yes", "No"),
        ["Yes"] if verdict.negligent else [],
        size=10.5,
    )
    page.paragraph(paragraph(rng, "legal", (2, 3)), size=10.5)
    page = doc.page(scanned=verdict.scanned_last and not verdict.negligent)
    page.title(f"{verdict.caption} - Special Verdict (continued)", size=13)
    page.line(
        "Question 3. What percentage of responsibility for the harm do you assign to each party?",
        size=10.5,
        bold=True,
        gap=8,
    )
    shares = [f"{verdict.fault[0]}%", f"{verdict.fault[1]}%"] if verdict.negligent else ["", ""]
    page.fields([(verdict.defendant, shares[0]), (verdict.plaintiff, shares[1])], size=10.5, label_width=190)
    page.line("Question 4. What are the plaintiff's total damages?", size=10.5, bold=True, gap=8)
    amounts = [A.money(v) for v in verdict.damages] if verdict.damages else [""] * len(DAMAGE_ROWS)
    total = A.money(sum(verdict.damages)) if verdict.damages else ""
    rows = [[r, a] for r, a in zip(DAMAGE_ROWS, amounts, strict=True)] + [["Total", total]]
    page.table(["Category of damages", "Amount"], rows, [354, 150], size=10.5)
    if verdict.negligent:
        page = doc.page(scanned=verdict.scanned_last)
        page.title(f"{verdict.caption} - Special Verdict (continued)", size=13)
        page.checkboxes(
            f"Question 5. Did {verdict.defendant} act with malice, oppression or fraud?",
            ("Yes", "No"),
            ["Yes" if verdict.malice else "No"],
            size=10.5,
        )
        page.paragraph(paragraph(rng, "legal", (2, 3)), size=10.5)
    page.signature("Presiding Juror", verdict.presiding, A.date_text(verdict.signed), size=10.5)
    if verdict.scanned_last:
        doc.probe(verdict.presiding, A.date_text(verdict.signed), "Presiding Juror")
    return doc


def _closing_page(verdict: Verdict) -> int:
    """The page with the presiding juror's signature (and question 5, asked only after a finding of negligence)."""
    return _DAMAGES + 1 if verdict.negligent else _DAMAGES


def _damages(verdict: Verdict, row: str) -> int:
    """The amount the jury found for one of :data:`DAMAGE_ROWS`."""
    return verdict.damages[DAMAGE_ROWS.index(row)]


def build(seed: int) -> Cluster:
    """Build the three verdict forms and their questions."""
    cluster = render_cluster(seed, "verdicts", _verdict, VERDICTS)
    ask = cluster.ask
    alvarez, okonkwo, henley = VERDICTS
    ask(
        "Did the jury find the freight company negligent in the suit brought by Rosa Alvarez?",
        A.yes_no(alvarez.negligent),
        (alvarez.file, _LIABILITY),
    )
    ask(
        "What share of responsibility did the jury assign to Rosa Alvarez herself?",
        A.percent_variants(alvarez.fault[1]),
        (alvarez.file, _DAMAGES),
    )
    ask(
        "How much did the jury award Rosa Alvarez for future medical care?",
        A.money_variants(_damages(alvarez, "Future medical expenses")),
        (alvarez.file, _DAMAGES),
    )
    ask(
        "Did the Alvarez jury find that the trucking company acted with malice?",
        A.yes_no(alvarez.malice),
        (alvarez.file, _closing_page(alvarez)),
    )
    ask(
        "Who signed the Alvarez verdict as presiding juror?",
        A.text_variants(alvarez.presiding),
        (alvarez.file, _closing_page(alvarez)),
    )
    ask(
        "What percentage of fault did the jury place on the apartment complex in the Okonkwo lawsuit?",
        A.percent_variants(okonkwo.fault[0]),
        (okonkwo.file, _DAMAGES),
    )
    ask(
        "What total damages did the jury find for the tenant who sued Lakeside Apartments?",
        A.money_variants(sum(okonkwo.damages)),
        (okonkwo.file, _DAMAGES),
    )
    ask(
        "Did the Okonkwo jury find that the landlord's negligence was a substantial factor in the tenant's harm?",
        A.yes_no(okonkwo.negligent),
        (okonkwo.file, _LIABILITY),
    )
    ask(
        "On what date was the verdict in the Lakeside Apartments case signed?",
        A.date_variants(okonkwo.signed),
        (okonkwo.file, _closing_page(okonkwo)),
    )
    ask(
        "Did the jury conclude that Marsh Pharmacy was negligent toward Martin Henley?",
        A.yes_no(henley.negligent),
        (henley.file, _LIABILITY),
    )
    ask(
        "Who was the presiding juror in the pharmacy case?",
        A.text_variants(henley.presiding),
        (henley.file, _closing_page(henley)),
    )
    ask(
        "What is the case number of Henley's lawsuit against the pharmacy?",
        A.text_variants(henley.case_no),
        (henley.file, _LIABILITY),
    )
    # cross-page
    ask(
        "What is the case number of the lawsuit against Lakeside Apartments, and who presided over its jury?",
        A.list_variants([okonkwo.case_no, okonkwo.presiding]),
        (okonkwo.file, _LIABILITY),
        (okonkwo.file, _closing_page(okonkwo)),
    )
    # cross-document
    more = max((alvarez, okonkwo), key=lambda v: v.damages[0])
    ask(
        "Who was awarded more for past medical bills: Rosa Alvarez or the tenant who sued Lakeside Apartments?",
        A.text_variants(more.plaintiff),
        (alvarez.file, _DAMAGES),
        (okonkwo.file, _DAMAGES),
    )
    ask(
        "According to its employee handbook, how soon must drivers of the company sued by Rosa Alvarez report an "
        "accident in a company vehicle?",
        A.text_variants("within 24 hours", "24 hours"),
        (alvarez.file, _LIABILITY),
        handbook.accident_page(),
    )
    return cluster
