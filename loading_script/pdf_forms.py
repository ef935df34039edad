"""AcroForm fields as text: each filled field's value with its label, where its widget is on the page.

A widget's drawn appearance is what MuPDF's text layer holds for it: a list box draws every option, a check box
the ZapfDingbats glyph ``3`` (a check mark), and either comes out after the page's text, away from its label.
:func:`form_lines` replaces the lines drawn inside each widget by one ``label: value`` line:

* the **label** is the field's tooltip (``/TU``) when it has one, else the nearest line of page text (to its
  left, above it or, first for check boxes and radio buttons, to its right), else the field's name; a line of
  page text that is just the label is replaced by the field's line;
* the **value** of a text field is its text; of a list or combo box, the selected option(s) only, joined by
  ``, ``; of a check box or radio button, ``checked`` or ``unchecked`` (from its appearance state ``/AS``).

Empty text and choice fields, push buttons and signature fields give no line. A radio group (its buttons share a
field name) gives one line: its selected button's, or, when none is selected, ``<group>: unchecked``. Unchecked
boxes and unselected groups give a line only on a page where something is filled in (a text or choice value, a
checked box): an empty form's dozens of ``unchecked`` lines would say nothing and bury its printed text.
"""

from __future__ import annotations

from typing import Any

from .pdf_layout import Line, Span

#: A label is looked for this far (points) to the left of a field, and a third of it to the right.
LABEL_REACH = 150.0
#: A label on the same row overlaps the field's first this many points (its box, if shorter).
ROW_POINTS = 18.0


def field_value(widget: Any) -> str | None:
    """The text of a widget's value (module docstring), ``None`` when it gives no line."""
    import pymupdf

    kind = widget.field_type
    if kind in (pymupdf.PDF_WIDGET_TYPE_CHECKBOX, pymupdf.PDF_WIDGET_TYPE_RADIOBUTTON):
        state = widget.parent.parent.xref_get_key(widget.xref, "AS")
        on = state[1] not in ("/Off", "") if state[0] == "name" else widget.field_value not in (None, "", "Off", False)
        return "checked" if on else "unchecked"
    if kind in (pymupdf.PDF_WIDGET_TYPE_TEXT, pymupdf.PDF_WIDGET_TYPE_LISTBOX, pymupdf.PDF_WIDGET_TYPE_COMBOBOX):
        value = widget.field_value
        values = [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value or "")]
        text = ", ".join(v.strip() for v in values if v.strip() and v != "Off")
        return text or None
    return None


def _checkable(widget: Any) -> bool:
    import pymupdf

    return widget.field_type in (pymupdf.PDF_WIDGET_TYPE_CHECKBOX, pymupdf.PDF_WIDGET_TYPE_RADIOBUTTON)


def _nearest_label(box: tuple[float, float, float, float], lines: list[Line], right_first: bool) -> Line | None:
    """The nearest line of text beside or above a widget's box."""
    x0, y0, x1, y1 = box
    top = min(y1, y0 + ROW_POINTS)  # a tall list box's label is beside its first row

    def same_row(line: Line) -> bool:
        return line.y0 < top and line.y1 > y0 and (min(line.y1, top) - max(line.y0, y0)) >= 0.4 * line.height

    left = [(x0 - ln.x1, ln) for ln in lines if same_row(ln) and ln.x1 <= x0 + 2 and x0 - ln.x1 <= LABEL_REACH]
    right = [(ln.x0 - x1, ln) for ln in lines if same_row(ln) and ln.x0 >= x1 - 2 and ln.x0 - x1 <= LABEL_REACH / 3]
    reach = 1.5 * max(top - y0, 12.0)
    above = [
        (y0 - ln.y1, ln) for ln in lines if ln.y1 <= y0 + 2 and y0 - ln.y1 <= reach and ln.x0 < x1 and ln.x1 > x0 - 20
    ]
    for side in [right, left, above] if right_first else [left, above, right]:
        if side:
            return min(side, key=lambda item: item[0])[1]
    return None


def form_lines(page: Any, lines: list[Line]) -> list[Line]:
    """``lines`` without the widgets' drawn text, with a ``label: value`` line per filled field."""
    widgets = list(page.widgets())
    boxes = [tuple(page.rotation_matrix * w.rect if page.rotation else w.rect) for w in widgets]

    def drawn_inside(line: Line) -> bool:
        cx, cy = (line.x0 + line.x1) / 2, (line.y0 + line.y1) / 2
        return any(b[0] - 1 <= cx <= b[2] + 1 and b[1] - 1 <= cy <= b[3] + 1 for b in boxes)

    out = [line for line in lines if not drawn_inside(line)]
    text_lines = [line for line in out if line.text().strip()]
    replaced: set[int] = set()
    values = [field_value(widget) for widget in widgets]
    filled = any(value not in (None, "unchecked") for value in values)
    radio = _radio_groups(widgets, values, filled)
    for index, (widget, box, value) in enumerate(zip(widgets, boxes, values, strict=True)):
        if value is None or (value == "unchecked" and not filled) or radio.get(index, True) is False:
            continue
        near = _nearest_label(box, text_lines, _checkable(widget))  # type: ignore[arg-type]
        tooltip = (widget.field_label or "").strip()
        if radio.get(index) == "group":  # no button of the group selected: the group's name, once
            near, tooltip = None, tooltip or (widget.field_name or "").strip()
        label = tooltip or (near.text().strip() if near is not None else "") or (widget.field_name or "field")
        line = Line(*box, spans=[Span(f"{label.rstrip(': ')}: {value}")])  # type: ignore[misc]
        if near is not None and not tooltip and id(near) not in replaced:
            replaced.add(id(near))
            out[next(i for i, ln in enumerate(out) if ln is near)] = line
            continue
        after = [i for i, ln in enumerate(out) if (ln.y0, ln.x0) <= (box[1], box[0])]
        out.insert(after[-1] + 1 if after else 0, line)
    return out


def _radio_groups(widgets: list[Any], values: list[str | None], filled: bool) -> dict[int, bool | str]:
    """For each radio button (by index), whether it gives a line: its group's selected button does (``True``);
    with none selected, the group's first button does (``"group"``) when the page is ``filled``; others do not."""
    import pymupdf

    groups: dict[str, list[int]] = {}
    for index, widget in enumerate(widgets):
        if widget.field_type == pymupdf.PDF_WIDGET_TYPE_RADIOBUTTON:
            groups.setdefault(widget.field_name or f"#{index}", []).append(index)
    verdicts: dict[int, bool | str] = {}
    for members in groups.values():
        selected = [i for i in members if values[i] == "checked"]
        for i in members:
            verdicts[i] = i == selected[0] if selected else ("group" if filled and i == members[0] else False)
    return verdicts
