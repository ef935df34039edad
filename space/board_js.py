"""The board's JavaScript (for ``demo.load(js=...)``): a header click sorts, and headers keep their tooltips.

Gradio 6.31's table has neither (see each function); :mod:`.board_tab` loads both with the page.
"""

from __future__ import annotations

from collections.abc import Mapping


def sort_on_click_js(first: Mapping[str, str]) -> str:
    """A JavaScript function (for ``demo.load(js=...)``): a click on a board header sorts by it, a second click
    the other way (``first``: the first click's direction per header).

    Gradio 6.31's table sorts only from a header's "⋮" menu ("Sort ascending" / "Sort descending"); a plain click
    selects the header (and stops the click there: the listener captures it on its way down). The click opens that
    menu and picks the entry, after gradio's own handling of the click (a menu opened during the click would be
    closed by it as a click outside). The table sorts by several columns in the order they were chosen, so the
    column sorted before is cleared first: one click, one sort key.
    """
    import json

    return (
        "() => { const first = " + json.dumps(dict(first), ensure_ascii=False) + "; let last = {th: null, dir: ''};"
        " const pick = (th, label, then) => { const menu = th.querySelector('.cell-menu-button');"
        " if (!menu) { return; } menu.click(); setTimeout(() => { const item = [...document.querySelectorAll("
        "'button')].find((b) => b.textContent.trim().startsWith(label)); if (item) { item.click(); }"
        " if (then) { setTimeout(then, 50); } }, 50); };"
        " document.addEventListener('click', (ev) => { const th = ev.target.closest('#leaderboard th');"
        " if (!th || !ev.isTrusted || ev.target.closest('button')) { return; }"
        " const name = (th.querySelector('.header') || th).innerText.trim();"
        " const same = last.th !== null && last.th.isConnected"
        " && (last.th.querySelector('.header') || last.th).innerText.trim() === name;"
        " const want = same ? (last.dir === 'asc' ? 'desc' : 'asc') : (first[name] || 'asc');"
        " const before = same || last.th === null || !last.th.isConnected ? null : last.th; last = {th, dir: want};"
        " const sort = () => pick(th, want === 'asc' ? 'Sort ascending' : 'Sort descending');"
        " setTimeout(() => (before ? pick(before, 'Clear sort', sort) : sort()), 0); }, true); }"
    )


def help_map_js(helps: Mapping[str, str]) -> str:
    """A JavaScript function (for ``demo.load(js=...)``) that keeps each board header's ``title`` on its tooltip.

    Gradio sets a header's ``title`` to its text and re-renders headers when the columns change, so a
    ``MutationObserver`` puts the tooltips back whenever the table changes.
    """
    import json

    return (
        "() => { const help = " + json.dumps(dict(helps), ensure_ascii=False) + ";"
        " const apply = () => { document.querySelectorAll('#leaderboard th').forEach((th) => {"
        " const text = (th.querySelector('.header') || th).innerText.trim(); const tip = help[text];"
        " if (tip && th.getAttribute('title') !== tip) { th.setAttribute('title', tip); } }); };"
        " new MutationObserver(apply).observe(document.body, {subtree: true, childList: true, attributes: true,"
        " attributeFilter: ['title']}); apply(); }"
    )
