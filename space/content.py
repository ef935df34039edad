"""Static texts of the Space: title, introduction, how to submit, citation."""

from __future__ import annotations

TITLE = "MADQA leaderboard"

#: Always shown above the tabs: one heading and one line (the rest of the introduction is in the About tab, so that
#: the board's rows are on the first screen, also on a phone).
HEADER = """\
# MADQA leaderboard
Agentic question answering over PDF collections: systems answer questions and cite the pages they used.
"""

#: In the About tab ("How the board is scored"): above the tabs, it pushed the board's rows below the fold.
INTRO = """\
Scores come from the MADQA metric: **Accuracy** (ANLS* ≥ 0.5 per item in `anls` mode; judge accuracy in `judge`
mode, bias-corrected only for the paper's judge, whose calibration it is) with a 95% CI, accuracy on cross-page
(**X-Page**) and cross-document (**X-Doc**) questions, **Page F1** / **Doc F1** of the citations, and the
**Kuiper** statistic of effort calibration (lower is better). The best value of each column is highlighted.
Rows named *Baseline* are simple deterministic systems computed by the
maintainers on the public test questions; none of them saw the hidden test labels.

The hidden test labels have two parts. The **official ranking** (first table) is accuracy on the **private part**,
published in periodic snapshots through the Ladder (a value changes only when it improves by more than a margin,
rounded to it). The **live board** scores every accepted file at once on the **public part** only; nothing shown at
submission time depends on the private part.

**Origin** says where a row comes from: *maintainer baseline* (computed by the maintainers), *verified* (a
submission the maintainers checked), or *self-reported* (an uploaded results file: its answers and citations are
scored here, but its effort figures — **Mean steps** and the **Kuiper** calibration, computed from the file's
`steps` — are as reported by the submitter).
"""

HOW_TO_SUBMIT = """\
### How to submit
1. Run your system on the **test** split (questions are public, labels are hidden), e.g.
   `madqa run --split test --model SPEC -o results.jsonl`.
2. Upload the results JSONL: one object per line with `id`, `answer` (a list of strings; a plain string
   counts as a one-element list, as in the public harness), `citations`
   (list of `{"document", "page"}`, pages 1-based) and `search_history` or `steps`.
3. Fill in the form, including the disclosure: models used, training data, compute budget.
4. Optionally, link the run's traces: `madqa export traces results.jsonl --output-dir traces/` and
   `madqa publish traces traces/ --repo ORG/NAME` put one trajectory per question in a Hub dataset (or
   `--bucket`, a storage bucket) that the Hub's trace viewer shows; give its URL
   (`https://huggingface.co/datasets/ORG/NAME` or `https://huggingface.co/buckets/ORG/NAME`). The board links it;
   the Space never opens it. Any other kind of URL is refused.

Your file is validated with the metric's own checks (ids must be test ids, no duplicates, types checked) and scored
against the hidden labels on the server: at once on the public part (the message and the live board), later on the
private part (the official ranking, at its next snapshot). A rejected file is not stored; the message names the
line and field. Missing test items count as wrong. The contact field is stored but never shown.

Only `.jsonl`/`.json` files are accepted, within the size limit; the uploaded copy is deleted after scoring. On the
hosted Space you must be logged in with your Hugging Face account. Each account (locally: each client address)
may have a limited number of **accepted** submissions per time window; rejected files do not count. A file that
was already submitted (same content) is refused with the number of the earlier submission. Names are normalised
(NFKC); invisible or bidi control characters and the maintainers' baseline names are refused. If the page shows an
error, just submit again: a retry of the same submission is answered with its number and never stored twice.
"""

CITATION = r"""@misc{borchmann2026madqa,
  title         = {Strategic Navigation or Stochastic Search? How Agents and Humans Reason Over Document Collections},
  author        = {Borchmann, {\L}ukasz and Van Landeghem, Jordy and Turski, Micha{\l} and Padarha, Shreyansh and
                   Kearns, Ryan Othniel and Mahdi, Adam and Rogge, Niels and Fourrier, Cl{\'e}mentine and
                   Han, Siwei and Yao, Huaxiu and Llabr{\'e}s, Artemis and Xu, Yiming and
                   Karatzas, Dimosthenis and Zhang, Hao and Datta, Anupam},
  year          = {2026},
  eprint        = {2603.12180},
  archivePrefix = {arXiv},
  url           = {https://arxiv.org/abs/2603.12180}
}
"""

#: Where the paper, the data and the code are (the About tab's first lines; issue 44, item 14). The code is the
#: ``madqa`` package (the harness, the metric and this Space), whose files this Space serves.
PAPER_URL = "https://arxiv.org/abs/2603.12180"
DATASET_URL = "https://huggingface.co/datasets/OxRML/MADQA"
CODE_URL = "https://huggingface.co/spaces/OxRML/MADQA-leaderboard/tree/main"

ABOUT = (
    f"""\
### About
- **Paper**: [arXiv:2603.12180]({PAPER_URL}), *Strategic Navigation or Stochastic Search? How Agents and Humans
  Reason Over Document Collections*.
- **Dataset**: [OxRML/MADQA]({DATASET_URL}) on the Hugging Face Hub.
- **Code**: [the `madqa` package and this Space's files]({CODE_URL}): the harness (`madqa run`), the metric and the
  board.

The test labels never leave the server: the board shows aggregate scores only, the live board of the public part
at once, the official ranking of the private part in Ladder snapshots (see the Space's README). Submissions are
stored in SQLite and, when configured, mirrored to a private Hub dataset.

If you use MADQA, please cite the paper (the same entry as the dataset card's):

```bibtex
"""
    + CITATION
    + "```\n"
)

AGENT_HELP = """\
Pick a dev question (its gold answer and the item's score are shown) or type your own, then run the BM25 search
agent, the code-REPL agent, static RAG (one BM25 retrieval, one answer), MDocAgent or the shell agent with the
configured model. Each search
with the pages it returned (or each code step with its output) and the final answer with its cited pages appear as
the agent works; while a model call is pending, a status line names the step and counts the seconds, and Run stays
disabled until the run has ended. Stop ends your run when its pending model call returns (a call in progress cannot
be cut); an answer that came before Stop could take effect is shown as such. One run at a time per visitor, and a
few wait behind the running one: past that, Run says the agent is busy. The REPL agent's code runs in a separate
walled worker process, never in this server.
"""

EXPLORE_HELP = """\
Explore a results file of the **dev** (or train) split: filter the questions (outcome, hop type, domain, category,
H.3 error class, effort, text), open one to see each step's query and pages (gold evidence pages framed green), the
REPL agent's code and output, tokens per step, and the final answer against the gold; the Summary tab has accuracy
with its CI, Page/Doc F1, the Kuiper curve, the budget curve, the error cascade and effort histograms. Upload two
files at once to compare runs (agreement, Cohen's κ, trajectories side by side). Test-split files are refused: their
labels are hidden. Locally, `madqa view results.jsonl --split dev` does the same.
"""
