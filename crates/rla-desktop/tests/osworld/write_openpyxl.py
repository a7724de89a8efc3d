"""Writes .xlsx files with openpyxl, as a Python user (or a task's author) would: formulas are
stored without a cached result. Reads `[{"path": ..., "sheets": [{"name": ..., "cells":
[[coordinate, value, style?], ...], "merged": [range, ...], "links": [[coordinate, url],
...], "zoom": N, "freeze": cell, "hidden_rows": [N, ...], "validations": [{"type": ...,
"formula1": ..., "sqref": ...}], "conditional": bool, "charts": [{"kind": "bar" | "bar3d" | "line" |
"pie" | "scatter", "dir": "col" | "bar", "title": text or null, "values": [col, first row, last
row], "cats": [col, first row, last row] or null, "at": cell, "legend": position or null}],
"pivots": [{"source": range, "fields": [[[x, hidden], ...], ...], "rows": [x], "cols": [x],
"data": [[fld, name or null, subtotal]], "pages": [fld], "location": range}]}]}]` on stdin (every key after `cells`
optional); a string value starting with `=` is a formula. A style is an object of
`bold`, `italic`, `underline`, `size`, `name`, `color` (aRGB, or `theme:N`), `fill` (aRGB of a
solid fill, or `gradient`) and `number_format`."""
import json
import sys

import openpyxl
from openpyxl.chart import BarChart, BarChart3D, LineChart, PieChart, Reference, ScatterChart, Series
from openpyxl.formatting.rule import CellIsRule
from openpyxl.pivot.cache import CacheDefinition, CacheField, CacheSource, SharedItems, WorksheetSource
from openpyxl.pivot.table import DataField, FieldItem, Location, PageField, PivotField, RowColField, TableDefinition
from openpyxl.styles import Color, Font, GradientFill, PatternFill
from openpyxl.worksheet.datavalidation import DataValidation


def styled(cell, st):
    font = {}
    for k in ("bold", "italic", "underline", "size", "name"):
        if k in st:
            font[k] = st[k]
    if "color" in st:
        c = st["color"]
        font["color"] = Color(theme=int(c[6:])) if c.startswith("theme:") else Color(rgb=c)
    if font:
        cell.font = Font(**font)
    if "fill" in st:
        f = st["fill"]
        cell.fill = GradientFill(stop=("FF0000", "0000FF")) if f == "gradient" else PatternFill("solid", fgColor=f)
    if "number_format" in st:
        cell.number_format = st["number_format"]


for book in json.load(sys.stdin):
    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for s in book["sheets"]:
        ws = wb.create_sheet(s["name"])
        for entry in s["cells"]:
            coord, value = entry[0], entry[1]
            ws[coord] = value
            if len(entry) > 2:
                styled(ws[coord], entry[2])
        for r in s.get("merged", []):
            ws.merge_cells(r)
        for coord, url in s.get("links", []):
            ws[coord].hyperlink = url
        if "zoom" in s:
            ws.sheet_view.zoomScale = s["zoom"]
        if "freeze" in s:
            ws.freeze_panes = s["freeze"]
        for r in s.get("hidden_rows", []):
            ws.row_dimensions[r].hidden = True
        for v in s.get("validations", []):
            dv = DataValidation(type=v["type"], formula1=v.get("formula1"), allow_blank=True)
            dv.add(v["sqref"])
            ws.add_data_validation(dv)
        for c in s.get("charts", []):
            kind = c["kind"]
            chart = {"bar": BarChart, "bar3d": BarChart3D, "line": LineChart, "pie": PieChart, "scatter": ScatterChart}[kind]()
            if kind.startswith("bar"):
                chart.type = c.get("dir", "col")
            if c.get("title") is not None:
                chart.title = c["title"]
            col, r0, r1 = c["values"]
            values = Reference(ws, min_col=col, min_row=r0, max_row=r1)
            if kind == "scatter":
                xs = Reference(ws, min_col=1, min_row=r0, max_row=r1)
                chart.series.append(Series(values, xs))
            else:
                chart.add_data(values, titles_from_data=False)
                if c.get("cats"):
                    cc, c0, c1 = c["cats"]
                    chart.set_categories(Reference(ws, min_col=cc, min_row=c0, max_row=c1))
            if "legend" in c:
                if c["legend"] is None:
                    chart.legend = None
                else:
                    chart.legend.position = c["legend"]
            ws.add_chart(chart, c.get("at", "E2"))
        for i, pv in enumerate(s.get("pivots", [])):
            fields = pv["fields"]
            cache = CacheDefinition(
                cacheSource=CacheSource(type="worksheet", worksheetSource=WorksheetSource(ref=pv["source"], sheet=s["name"])),
                cacheFields=[CacheField(name=f"F{k}", sharedItems=SharedItems()) for k in range(len(fields))],
            )
            table = TableDefinition(
                name=f"PivotTable{i + 1}", cacheId=i + 1, dataCaption="Values",
                location=Location(ref=pv["location"], firstHeaderRow=1, firstDataRow=1, firstDataCol=1),
                pivotFields=[PivotField(items=[FieldItem(x=x, h=(True if h else None)) for x, h in f]) for f in fields],
                rowFields=[RowColField(x=x) for x in pv["rows"]],
                colFields=[RowColField(x=x) for x in pv["cols"]],
                dataFields=[DataField(name=n, fld=fld, subtotal=sub) for fld, n, sub in pv["data"]],
                pageFields=[PageField(fld=f) for f in pv["pages"]],
            )
            table.cache = cache
            ws._pivots.append(table)
        if s.get("conditional"):
            ws.conditional_formatting.add("A1:C5", CellIsRule(operator="greaterThan", formula=["10"], fill=PatternFill("solid", fgColor="FFFF0000")))
    wb.save(book["path"])
