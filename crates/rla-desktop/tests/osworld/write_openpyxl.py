"""Writes .xlsx files with openpyxl, as a Python user (or a task's author) would: formulas are
stored without a cached result. Reads `[{"path": ..., "sheets": [{"name": ..., "cells":
[[coordinate, value], ...]}]}]` on stdin; a string value starting with `=` is a formula."""
import json
import sys

import openpyxl

for book in json.load(sys.stdin):
    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for s in book["sheets"]:
        ws = wb.create_sheet(s["name"])
        for coord, value in s["cells"]:
            ws[coord] = value
    wb.save(book["path"])
