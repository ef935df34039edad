"""The traces URL of a submission (issue 42): a table of attack URLs the form refuses and Hub URLs it accepts, and
how the board and the row detail write the link (escaped, new tab, ``rel="nofollow noopener noreferrer"``)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

pytest.importorskip("gradio")

from madqa.space.board_detail import detail_markdown  # noqa: E402
from madqa.space.board_view import column_datatypes, styled_view, view_frame  # noqa: E402
from madqa.space.leaderboard import TRACES_COLUMN, board_frame  # noqa: E402
from madqa.space.storage import StoredSubmission  # noqa: E402
from madqa.space.traces_link import (  # noqa: E402
    LINK_REL,
    MAX_TRACES_CHARS,
    TRACES_LABEL,
    TracesLinkError,
    check_traces_url,
    traces_anchor,
)

#: Accepted values → what is stored.
GOOD = {
    "https://huggingface.co/datasets/OxRML/madqa-traces": "https://huggingface.co/datasets/OxRML/madqa-traces",
    "https://hf.co/datasets/me/traces": "https://hf.co/datasets/me/traces",
    "https://huggingface.co/datasets/me/traces/": "https://huggingface.co/datasets/me/traces",
    "https://huggingface.co/datasets/me/traces/tree/main/bm25": "https://huggingface.co/datasets/me/traces/tree/main/bm25",
    "https://huggingface.co/datasets/me/traces/blob/main/q0006.jsonl": (
        "https://huggingface.co/datasets/me/traces/blob/main/q0006.jsonl"
    ),
    "https://huggingface.co/buckets/me/traces": "https://huggingface.co/buckets/me/traces",
    "https://hf.co/buckets/my-org/run_1.traces/bm25": "https://hf.co/buckets/my-org/run_1.traces/bm25",
    "HTTPS://HuggingFace.CO/Datasets/Me/Traces": "https://huggingface.co/datasets/Me/Traces",  # case of scheme/host
}

#: Refused values, each an attack or a near miss.
BAD = [
    "javascript:alert(1)",
    "JavaScript:alert(document.cookie)//https://huggingface.co/datasets/a/b",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "vbscript:msgbox(1)",
    "http://huggingface.co/datasets/a/b",  # not https
    "hf://datasets/a/b",
    "hf://buckets/a/b",
    "ftp://huggingface.co/datasets/a/b",
    "//huggingface.co/datasets/a/b",  # scheme-relative
    "huggingface.co/datasets/a/b",  # no scheme
    "https://huggingface.co@evil.com/datasets/a/b",  # userinfo: the host is evil.com
    "https://user:pass@huggingface.co/datasets/a/b",
    "https://huggingface.co:443@evil.com/datasets/a/b",
    "https://huggingface.co:443/datasets/a/b",  # a port
    "https://huggingface.co.evil.com/datasets/a/b",
    "https://evil.com/huggingface.co/datasets/a/b",
    "https://evilhuggingface.co/datasets/a/b",
    "https://huggingface.com/datasets/a/b",
    "https://www.huggingface.co/datasets/a/b",
    "https://huggingface.co./datasets/a/b",  # trailing dot
    "https://\u04bbuggingface.co/datasets/a/b",  # Cyrillic shha for h
    "https://huggingf\u0430ce.co/datasets/a/b",  # Cyrillic a
    "https://\uff48\uff55\uff47\uff47\uff49\uff4e\uff47\uff46\uff41\uff43\uff45.co/datasets/a/b",  # full-width
    "https://xn--uggingface-n7h.co/datasets/a/b",  # punycode of a look-alike
    "https://huggingface.co/datasets/a/b\u200b",  # zero-width space
    "https://huggingface.co/datasets/a/b\u202e",  # bidi override
    "https://huggingface.co\\@evil.com/datasets/a/b",  # backslash: some parsers read it as "/"
    "https:\\\\huggingface.co\\datasets\\a\\b",
    "https://huggingface.co/datasets/a/b\nhttps://evil.com",  # a second line
    "https://huggingface.co/datasets/a/b\r\nSet-Cookie: x=1",
    "https://huggingface.co/datasets/a/b\t",
    "https://huggingface.co/datasets/a/b c",
    " https://huggingface.co/datasets/a/b",
    "https://huggingface.co/datasets/a/b\x00",
    "https://huggingface.co/datasets/a/b\x7f",
    "https://huggingface.co/datasets/a/b?x=<script>",  # a query
    "https://huggingface.co/datasets/a/b#frag",  # a fragment
    'https://huggingface.co/datasets/a/b"onmouseover="alert(1)',  # attribute break-out
    "https://huggingface.co/datasets/a/b'><script>alert(1)</script>",
    "https://huggingface.co/datasets/a/b/<img src=x>",
    "https://huggingface.co/datasets/a/b/%2e%2e/%2e%2e/spaces/x/y",  # percent escapes
    "https://huggingface.co/datasets/a%40evil.com/b",
    "https://huggingface.co/datasets/a/b/../../spaces/evil/app",  # dot segments
    "https://huggingface.co/datasets/a/b/./x",
    "https://huggingface.co/datasets/../spaces/x",
    "https://huggingface.co/datasets/a--b/c",
    "https://huggingface.co/datasets/a/b..c",
    "https://huggingface.co/datasets/a",  # no repo name
    "https://huggingface.co/datasets/",
    "https://huggingface.co/datasets/-a/b",
    "https://huggingface.co/datasets/a/b//c",
    "https://huggingface.co/spaces/a/b",  # not a dataset or bucket
    "https://huggingface.co/a/b",  # a model repo
    "https://huggingface.co/login?next=/datasets/a/b",
    "https://huggingface.co/datasets/a/" + "b" * 97,  # a name over 96 characters
    "https://huggingface.co/datasets/a/b/" + "x" * (MAX_TRACES_CHARS - 35),  # over the length limit
]


@pytest.mark.parametrize("url", sorted(GOOD))
def test_hub_dataset_and_bucket_urls_are_accepted(url: str) -> None:
    assert check_traces_url(url) == GOOD[url]


@pytest.mark.parametrize("empty", [None, "", "   ", "\n"])
def test_no_traces_is_allowed(empty) -> None:
    assert check_traces_url(empty) == ""
    assert traces_anchor(empty) == ""


@pytest.mark.parametrize("url", BAD, ids=[ascii(u)[:60] for u in BAD])
def test_attack_urls_are_refused_with_a_one_line_message_naming_the_field(url: str) -> None:
    with pytest.raises(TracesLinkError) as info:
        check_traces_url(url)
    message = str(info.value)
    assert message.startswith(f"form: the field '{TRACES_LABEL}' ") and "\n" not in message
    assert "<" not in message and "javascript" not in message.lower()  # the value is never echoed


def test_refusals_are_a_few_fixed_reasons_never_the_value() -> None:
    reasons = set()
    for url in BAD:
        with pytest.raises(TracesLinkError) as info:
            check_traces_url(url)
        reasons.add(str(info.value))
    assert len(reasons) == 6, reasons  # length, ASCII, spaces/controls, backslash, the form, dot segments
    assert traces_anchor(url) == ""  # a stored value refused today is never shown as a link


def test_the_length_limit_is_the_one_named() -> None:
    head = "https://huggingface.co/datasets/a/b/"
    fits = head + "x" * (MAX_TRACES_CHARS - len(head))
    assert check_traces_url(fits) == fits
    with pytest.raises(TracesLinkError, match=f"longer than {MAX_TRACES_CHARS} characters"):
        check_traces_url(fits + "x")


class _Anchors(HTMLParser):
    """The ``<a>`` tags of an HTML text, with their attributes and text."""

    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        assert tag == "a", tag  # nothing else is ever written
        self.anchors.append(dict(attrs))

    def handle_data(self, data: str) -> None:
        if self.anchors:
            self.anchors[-1]["text"] = (self.anchors[-1].get("text") or "") + data


def _anchors(text: str) -> list[dict[str, str | None]]:
    parser = _Anchors()
    parser.feed(text)
    return parser.anchors


def test_the_link_opens_a_new_tab_without_referrer_or_opener_and_is_escaped() -> None:
    url = "https://huggingface.co/datasets/me/traces"
    (a,) = _anchors(traces_anchor(url, 'x"<b>&_*'))
    assert a == {"href": url, "target": "_blank", "rel": LINK_REL, "text": 'x"<b>&_*'}
    assert set(LINK_REL.split()) == {"nofollow", "noopener", "noreferrer"}
    raw = traces_anchor(url, 'x"<b>')
    assert "<b>" not in raw and '"<' not in raw


def _sub(sid: int, traces: str) -> StoredSubmission:
    form = {"system": f"sys {sid}", "submitter": "u", "agent": "a", "model": "m", "contact": "c@x", "traces": traces}
    form.update(models_used="m", training_data="none", compute="1h")
    report = {"accuracy": 0.5, "n": 10, "n_predicted": 10, "mode": "anls", "metric_version": "t"}
    return StoredSubmission(sid, "2026-12-01 10:00:00", "user", form, "anls", "t", report, "agent")


def test_the_board_links_traces_where_given_and_shows_nothing_where_not() -> None:
    given = "https://hf.co/buckets/me/run_1"
    # an old mirror file could hold a value refused today: stored, but never a link
    subs = [_sub(1, given), _sub(2, ""), _sub(3, 'javascript:alert("x")')]
    board = board_frame(subs)
    assert dict(zip(board["#"], board[TRACES_COLUMN], strict=True)) == {1: given, 2: "", 3: 'javascript:alert("x")'}
    view = view_frame(board, ["Traces"])
    cells = dict(zip(view["#"], view["Traces"], strict=True))
    assert _anchors(cells[1]) == [{"href": given, "target": "_blank", "rel": LINK_REL, "text": "traces"}]
    assert cells[2] == "" and cells[3] == ""
    assert column_datatypes(list(view.columns)) == ["str", "str", "html", "str"]
    shown = styled_view(view).to_html()  # as the table gets it: the link, and no "—" where there is none
    assert traces_anchor(given) in shown and "javascript" not in shown and "—" not in shown


def test_the_row_detail_links_traces_where_given() -> None:
    url = "https://huggingface.co/datasets/my_org/madqa_traces/tree/main/bm25"
    text = detail_markdown(_sub(1, url))
    (a,) = _anchors(text[text.index("<a ") : text.index("</a>") + 4])
    assert a == {
        "href": url,
        "target": "_blank",
        "rel": LINK_REL,
        "text": "dataset my_org/madqa_traces/tree/main/bm25",
    }
    assert "&#95;" in text  # the underscores are entities: Markdown cannot read emphasis into them
    assert "Traces" not in detail_markdown(_sub(2, "")) and "<a" not in detail_markdown(_sub(3, "http://x.co/a/b"))
