"""The static HTML report: one ``index.html`` plus PNG figures in ``fig/``, no scripts, no network.

The page opens from disk in any browser (and reads the same with JavaScript off): figures are plain
``<img>`` elements with alt text and captions, navigation is anchor links, styling is one inline
stylesheet. Sections: at a glance (fit statistics, where the data came from), warnings, figures (or
why a figure was skipped), every parameter with value, unit, standard error and bounds, the recovery
against a virtual GPU's ground truth when available, and provenance (device, driver, toolkit version,
campaign, source files with their sha256).
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from calib import __version__
from calib.core.params import ParameterFile
from calib.core.errors import BadInputError
from calib.fit.uncertainty import named_alone
from calib.report.compare import declared_undetermined
from calib.report.inputs import ReportInputs
from calib.report.plots import FIGURES, Context, Skip, with_predictions
from calib.report_text import rmse_text
from calib.core.session import file_sha256

INDEX = "index.html"
FIG_DIR = "fig"
DPI = 100

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
main{max-width:1180px;margin:0 auto;padding:1.2em 1.5em 3em}
h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.25em;margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}
h3{font-size:1.05em;margin-top:1.2em}
.sub{color:#555;margin:0 0 1em}
nav{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.5em 1em;margin:1em 0}
nav a{margin-right:.9em;white-space:nowrap;line-height:1.7}
.cards{display:flex;flex-wrap:wrap;gap:.8em;margin:1em 0}
.card{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.6em .9em;min-width:13em}
.card b{font-size:1.25em;display:block}
.card span{color:#555;font-size:.85em}
figure{background:#fff;border:1px solid #ddd;border-radius:6px;margin:1em 0;padding:.6em}
figure img{max-width:100%;height:auto;display:block;margin:0 auto}
figcaption{color:#333;font-size:.92em;margin-top:.4em}
.skip{background:#fff8e1;border:1px solid #f0d58c;border-radius:6px;padding:.6em .9em}
table{border-collapse:collapse;background:#fff;font-size:.88em;margin:.6em 0;width:100%}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f0f0f0}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.flag td{background:#fff4f0}
code,.hash{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.85em}
.hash{word-break:break-all}
ul.warn li{margin:.25em 0}
.tag{display:inline-block;font-size:.75em;padding:0 .4em;border-radius:3px;background:#eee;margin-right:.3em}
.tag.bound{background:#ffd9c7}.tag.ident{background:#ffe9a8}.tag.note{background:#dde8f5}
footer{color:#777;font-size:.8em;margin-top:3em}
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def fmt(x: Any, sig: int = 5) -> str:
    """A number for the page: ``sig`` significant digits, '-' for missing/non-finite values."""
    if x is None:
        return "-"
    if isinstance(x, int):   # bool included
        return str(x)
    try:
        v = float(x)
    except (TypeError, ValueError):
        return _e(x)
    if not math.isfinite(v):
        return "-" if math.isnan(v) else ("+inf" if v > 0 else "-inf")
    return f"{v:.{sig}g}"


def classify_warning(w: str) -> str:
    """'bound', 'ident' (identifiability) or 'note'."""
    lw = w.lower()
    if "bound" in lw:
        return "bound"
    if any(k in lw for k in ("identifiable", "cannot separate", "correlated", "collinear", "separate",
                             "not identified", "poorly determined", "undetermined", "inflation")):
        return "ident"
    return "note"


TAG_TEXT = {"bound": "at a bound", "ident": "identifiability", "note": "note"}


def _bytes_text(n: float) -> str:
    """4096 -> '4 KiB', 268435456 -> '256 MiB'."""
    for unit, size in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{n:.0f} B"


def _stat_cards(pf: ParameterFile) -> str:
    cards = []
    for sec, section in pf.items():
        st = section.stats
        lines = [f"model {_e(section.model)}", f"{st.get('n_samples', '-')} samples"]
        if st.get("r2") is not None:
            lines.append(f"R<sup>2</sup> {fmt(st['r2'], 5)}")
        if st.get("heldout_mape_pct") is not None:
            lines.append(f"held-out MAPE {fmt(st['heldout_mape_pct'], 3)}% ({st.get('heldout_rows', '?')} rows)")
        if st.get("cv_mape_pct") is not None:
            lines.append(f"cross-validated MAPE {fmt(st['cv_mape_pct'], 3)}%")
        # say what the MAPE is of: power, temperature or time (a bare "transfer MAPE 82 %" explained nothing)
        what = next((w for k, w in (("rmse_w", "power "), ("rmse_c", "temperature "), ("rmse_s", "time "))
                     if st.get(k) is not None), "")
        head = f"{what}MAPE {fmt(st.get('mape_pct'), 3)}%" if st.get("mape_pct") is not None else "no fit statistics"
        head += f", {rmse_text(st)}" if rmse_text(st) else ""
        by = st.get("mape_pct_by_bytes")
        if by:   # copies: the small ones (microseconds of latency and host jitter) dominate the MAPE
            lines.append("copy-time MAPE by copy size: " + ", ".join(
                f"{_bytes_text(float(b))} {v:.3g}%" for b, v in sorted(by.items(), key=lambda kv: float(kv[0]))))
        cards.append(f'<div class="card"><span>{_e(sec)}</span><b>{head}</b><span>{"<br>".join(lines)}</span></div>')
    return '<div class="cards">' + "".join(cards) + "</div>"


def _param_table(pf: ParameterFile) -> tuple[str, int]:
    rows = []
    count = 0
    for sec, section in pf.items():
        und = declared_undetermined(section)
        # parameters the campaign does not determine one by one: what it determines instead (issue 29)
        for cb in section.stats.get("identifiability") or []:
            if named_alone(cb):
                what = cb.get("reason", "not determined on its own")
            elif cb.get("kind") == "power_at_ar":
                what = f"determined as the power of {cb['unit']} at AR {cb['ar']:.3g}: {fmt(cb['value'], 4)} W"
            else:
                tot = cb.get("stderr_total", cb.get("stderr"))
                what = (f"determined only as {cb.get('label', '')} = {fmt(cb['value'], 4)}"
                        + ("" if tot is None else f" +/- {fmt(tot, 2)} (total)"))
            for n in cb.get("undetermined") or []:
                und.setdefault(n, what)
        for name, p in section.params.items():
            count += 1
            side = p.at_bound() if p.vary else None
            flags = []
            if name in und:  # a bound or a stand-in, not a measurement
                flags.append(f'<span class="tag ident">undetermined: {_e(und[name])}</span>')
            elif p.vary and p.stderr is None:
                flags.append('<span class="tag ident">no standard error</span>')
            if side:
                flags.append(f'<span class="tag bound">at {side} bound</span>')
            rel = "-"
            if p.stderr is not None and p.value:
                r = p.stderr / abs(p.value)
                rel = f"{100 * r:.2g}%" if r < 10 else "&gt;1000%"  # e.g. a value sitting on a bound of 0
            cls = ' class="flag"' if side or (p.vary and p.stderr is None) or name in und else ""
            rows.append(
                f'<tr id="p-{_e(sec)}-{_e(name)}"{cls}><td>{_e(sec)}</td><td><code>{_e(name)}</code></td>'
                f'<td class="num">{fmt(p.value, 6)}</td><td>{_e(p.unit)}</td>'
                f'<td class="num">{"-" if p.stderr is None else fmt(p.stderr, 2)}</td>'
                f'<td class="num">{"-" if p.stderr_total is None else fmt(p.stderr_total, 2)}</td><td class="num">{rel}</td>'
                f'<td class="num">{fmt(p.min, 4) if math.isfinite(p.min) else "-inf"}</td>'
                f'<td class="num">{fmt(p.max, 4) if math.isfinite(p.max) else "+inf"}</td>'
                f'<td>{"fitted" if p.vary else "fixed"} {"".join(flags)}</td><td>{_e(p.description)}</td></tr>')
    head = ("<tr><th>section</th><th>parameter</th><th>value</th><th>unit</th><th>standard error</th>"
            "<th>total standard error</th><th>rel. SE</th><th>min</th><th>max</th><th>status</th><th>meaning</th></tr>")
    return f'<table id="parameter-table"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>', count


def _warnings_html(pf: ParameterFile, extra: list[tuple[str, str]]) -> str:
    items = []
    for where, w in [(sec, w) for sec, section in pf.items() for w in section.stats.get("warnings", [])] + extra:
        k = classify_warning(w)
        items.append(f'<li><span class="tag {k}">{TAG_TEXT[k]}</span><b>{_e(where)}</b>: {_e(w)}</li>')
    if not items:
        return "<p>The fit raised no warnings.</p>"
    return f'<ul class="warn">{"".join(items)}</ul>'


def _recovery_html(rec: dict) -> str:
    rows = []
    from calib.report.recovery import error_text

    for r in rec.get("parameters", []):
        err = error_text(r)
        rows.append(f"<tr><td><code>{_e(r['parameter'])}</code></td><td>{_e(r.get('unit', ''))}</td>"
                    f"<td class=num>{fmt(r.get('truth'))}</td><td class=num>{fmt(r.get('fitted'))}</td>"
                    f"<td class=num>{fmt(r.get('stderr'), 2)}</td><td class=num>{err}</td>"
                    f"<td>{_e(r.get('truth_from', ''))}</td></tr>")
    a = rec.get("ar_function_agreement", {})
    tail = (f"<p>Access-rate function (linear/log) agrees with the virtual GPU's physics for {a.get('agree')} of "
            f"{a.get('of')} units.</p>") if a else ""
    if rec.get("heldout_mape_pct") is not None:
        tail += f"<p>Held-out workloads: power MAPE {fmt(rec['heldout_mape_pct'], 3)}% over {rec.get('heldout_rows')} rows.</p>"
    return ("<p>This parameter set was fitted on a virtual GPU whose hidden physics is known; the table compares "
            "each fitted value with the value the physics implies.</p><table><thead><tr><th>parameter</th><th>unit</th>"
            "<th>truth</th><th>fitted</th><th>standard error</th><th>error</th><th>truth from</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>{tail}")


def _said_by_fit(pf: ParameterFile, warning: str) -> bool:
    """Whether a schema-check warning ('power.parameters.NAME: ...') repeats what the fit already said."""
    where = warning.split(":", 1)[0].split(".")
    if len(where) < 3:
        return False
    sec, name = where[0], where[-1]
    section = pf.get(sec)
    return section is not None and any(name in w for w in section.stats.get("warnings", []))


def _kv_table(pairs: list[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>" for k, v in pairs)
    return f"<table>{rows}</table>"


def _provenance_html(inp: ReportInputs) -> str:
    dev = inp.params.device
    prov = inp.params.provenance
    clocks = dev.get("clocks") or {}
    dpairs = [("GPU", _e(dev.get("name"))), ("UUID", f'<span class="hash">{_e(dev.get("uuid") or "-")}</span>'),
              ("SMs", _e(dev.get("sm_count"))), ("driver version", _e(dev.get("driver_version") or "unknown")),
              ("CUDA version", _e(dev.get("cuda_version") or "unknown")),
              ("default clocks", f"core {fmt(clocks.get('core_mhz'))} MHz, memory {fmt(clocks.get('mem_mhz'))} MHz")]
    sup = clocks.get("supported") or {}
    if sup:
        dpairs.append(("supported clocks", "; ".join(f"{_e(k)}: {len(v)} levels ({fmt(min(v))}-{fmt(max(v))})"
                                                      for k, v in sup.items() if v)))
    dpairs += [(k, _e(dev[k])) for k in ("preset", "warp_issue_per_cycle") if dev.get(k) is not None]
    camp = prov.get("campaign")
    camp_s = (", ".join(f"{_e(k)} {_e(camp[k])}" for k in ("name", "seed", "steps") if k in camp)
              or _e(json.dumps(camp)[:300])) if isinstance(camp, dict) else "-" if camp is None else _e(camp)
    ppairs = [("toolkit version (fit)", _e(prov.get("toolkit_version"))), ("fitted (UTC)", _e(prov.get("created_utc"))),
              ("campaign", camp_s), ("session", _e(prov.get("session") or "-"))]
    if prov.get("citation"):
        ppairs.append(("citation", _e(prov["citation"])))
    srcs = prov.get("sources", [])
    src_rows = "".join(f"<tr><td><code>{_e(s['path'])}</code></td><td>{_e(s.get('role', ''))}</td>"
                       f'<td class="hash">{_e(s["sha256"])}</td></tr>' for s in srcs)
    src_tbl = (f"<table><thead><tr><th>source file</th><th>role</th><th>sha256</th></tr></thead><tbody>{src_rows}</tbody></table>"
               if srcs else "<p>No source files are recorded (a hand-entered parameter set).</p>")
    mine = [("parameter file", (f"<code>{_e(inp.params_path.name)}</code> "
                                f'<span class="hash">sha256 {file_sha256(inp.params_path)}</span>'))]
    if inp.samples_path is not None:
        mine.append(("samples table", (f"<code>{_e(inp.samples_path.name)}</code> ({_e(inp.samples_origin)}) "
                                       f'<span class="hash">sha256 {file_sha256(inp.samples_path)}</span>')))
    elif inp.samples is not None:
        mine.append(("samples table", _e(inp.samples_origin)))
    if inp.session is not None:
        mine.append(("session", f"<code>{_e(inp.session.path)}</code>"))
    return ("<h3>Device</h3>" + _kv_table(dpairs) + "<h3>Fit</h3>" + _kv_table(ppairs)
            + "<h3>Source files of the fit</h3>" + src_tbl + "<h3>Files this report was drawn from</h3>" + _kv_table(mine))


_META = re.compile(r'<meta name="(?P<name>generator|calib-parameters-sha256)" content="(?P<content>[^"]*)">')
_ROW = re.compile(r'<tr id="p-[^"]*"(?: class="flag")?><td>(?P<sec>[^<]*)</td><td><code>(?P<name>[^<]*)</code></td>'
                  r'<td class="num">(?P<value>[^<]*)</td><td>[^<]*</td><td class="num">(?P<se>[^<]*)</td>')


def _number(text: str) -> float | None:
    text = html.unescape(text).strip()
    if text == "-":
        return None
    try:
        return float(text)
    except ValueError:
        return math.nan


def check_report(page: str, pf: ParameterFile, params_sha256: str, toolkit_version: str | None = None) -> list[str]:
    """What in a report page (``index.html``) disagrees with the parameter file it claims to show: the
    digest of the parameter file it was drawn from (``calib-parameters-sha256``), the generating toolkit
    version (``generator``, when ``toolkit_version`` is given), every parameter's value (to the 6 digits
    shown) and standard error (to the 2 digits shown), parameters missing or extra, and, for a page of this
    toolkit version, the fit statistics. Returns the disagreements as sentences ([] when none)."""
    out = []
    meta = {m["name"]: html.unescape(m["content"]) for m in _META.finditer(page)}
    if "calib-parameters-sha256" in meta and meta["calib-parameters-sha256"] != params_sha256:
        out.append(f"it was drawn from a parameter file with sha256 {meta['calib-parameters-sha256'][:16]}..., not "
                   f"this one ({params_sha256[:16]}...)")
    generator = meta.get("generator", "")
    if toolkit_version is not None and generator and generator != f"calib {toolkit_version}":
        out.append(f"it was generated by {generator}, the manifest says calib {toolkit_version}")
    shown: dict[tuple[str, str], tuple[float | None, float | None, str]] = {}
    for m in _ROW.finditer(page):
        key = (html.unescape(m["sec"]), html.unescape(m["name"]))
        shown[key] = (_number(m["value"]), _number(m["se"]), html.unescape(m["value"]))
    if 'id="parameter-table"' not in page:
        return out + ["it has no parameter table (not a calib report?)"]
    lacking, moved = [], []
    for sec, section in pf.items():
        for name, p in section.params.items():
            row = shown.pop((sec, name), None)
            if row is None:
                lacking.append(f"{sec}.{name}")
                continue
            value, se, text = row
            if value is None or not math.isclose(value, p.value, rel_tol=1e-5, abs_tol=1e-300):
                moved.append(f"{sec}.{name} is {text} in the report, {fmt(p.value, 6)} in the parameter file")
            if (se is None) != (p.stderr is None) or (se is not None and p.stderr is not None
                                                      and not math.isclose(se, p.stderr, rel_tol=0.06)):
                moved.append(f"the standard error of {sec}.{name} is {'-' if se is None else fmt(se, 2)} in the "
                              f"report, {'-' if p.stderr is None else fmt(p.stderr, 2)} in the parameter file")
    out += moved[:3] + ([f"and {len(moved) - 3} more numbers"] if len(moved) > 3 else [])
    if lacking:
        out.append(f"it lacks {len(lacking)} parameter(s) of the parameter file ({', '.join(lacking[:3])}"
                   + (f", and {len(lacking) - 3} more" if len(lacking) > 3 else "") + ")")
    extra = [f"{s}.{n}" for s, n in shown]
    if extra:
        out.append(f"it shows {len(extra)} parameter(s) the parameter file does not have ({', '.join(extra[:3])}"
                   + (f", and {len(extra) - 3} more" if len(extra) > 3 else "") + ")")
    if generator == f"calib {__version__}" and _stat_cards(pf) not in page:
        out.append("its fit statistics (At a glance) differ from the parameter file's")
    return out


def render_report(inp: ReportInputs, out_dir: Path, progress: Any = None) -> dict[str, Any]:
    """Draw the figures into ``out_dir/fig`` and write ``out_dir/index.html``. Returns a summary
    (figures drawn, figures skipped with reasons, parameter count). ``progress(key)`` is called before
    each figure (its :data:`FIGURES` key) and before the page ("page")."""
    step = progress or (lambda key: None)
    pf = inp.params
    notes: list[str] = list(inp.notes)
    samples = with_predictions(pf, inp.samples, notes) if inp.samples is not None and "power" in pf else None
    ctx = Context(pf, samples, inp.session, notes, floorplan=inp.floorplan,
                  floorplan_source=inp.floorplan_path.name if inp.floorplan_path is not None else "")
    (out_dir / FIG_DIR).mkdir(parents=True, exist_ok=True)
    drawn, skipped, blocks = [], [], []
    for spec in FIGURES:
        step(spec.key)
        try:
            fig, cap = spec.draw(ctx)
        except Exception as e:  # noqa: BLE001 - one figure failing must not cost the reader the whole page
            why = str(e) if isinstance(e, Skip) else f"could not be drawn ({type(e).__name__}: {e}); please report this"
            if not isinstance(e, Skip):
                warnings.warn(f"report figure '{spec.key}' {why}")
            skipped.append((spec.key, why))
            blocks.append(f'<section id="fig-{spec.key}"><h2>{_e(spec.title)}</h2>'
                          f'<p class="skip">Not drawn: {_e(why)}.</p></section>')
            continue
        path = out_dir / FIG_DIR / f"{spec.key}.png"
        fig.savefig(path, dpi=DPI)
        w, h = (round(v * DPI) for v in fig.get_size_inches())
        drawn.append(spec.key)
        blocks.append(f'<section id="fig-{spec.key}"><h2>{_e(spec.title)}</h2><figure>'
                      f'<img src="{FIG_DIR}/{spec.key}.png" width="{w}" height="{h}" alt="{_e(spec.title)}: {_e(cap)}">'
                      f"<figcaption>{_e(cap)}</figcaption></figure></section>")
    step("page")
    table, n_params = _param_table(pf)
    try:
        vwarn = pf.warnings(inp.params_path.name)
    except BadInputError as e:  # loaded files are valid; keep the page even if the schema moved on
        vwarn = [str(e)]
    extra = [("schema check", w) for w in vwarn if not _said_by_fit(pf, w)]
    extra += [("report", n) for n in dict.fromkeys(notes)]
    rec_html = ""
    rec_path = inp.params_path.with_name(inp.params_path.name[:-5] + ".recovery.json") if inp.params_path.name.endswith(".json") else None
    if rec_path is not None and rec_path.is_file():
        try:
            rec_html = _recovery_html(json.loads(rec_path.read_text(encoding="utf-8")))
        except (ValueError, KeyError, TypeError):
            rec_html = "<p>The recovery report beside the parameter file could not be read.</p>"
    from calib.report.advice import sections as advice_sections

    try:
        adv = advice_sections(pf, inp.kernels)
    except BadInputError as e:
        adv = []
        notes.append(f"kernel sections not shown: {e}")
        extra.append(("report", notes[-1]))
    blocks += [f'<section id="{k}"><h2>{_e(t)}</h2>{body}</section>' for k, t, body in adv]
    dev = pf.device
    now = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    toc = [("glance", "At a glance"), ("warnings", "Warnings")] + [(f"fig-{s.key}", s.title) for s in FIGURES]
    toc += [(k, t) for k, t, _ in adv]
    toc += [("parameters", "Parameters")] + ([("recovery", "Recovery")] if rec_html else []) + [("provenance", "Provenance")]
    data_line = (f"Data: {_e(inp.samples_origin)}" if samples is not None else
                 "Data: none found. This page shows the parameter file alone; figures that need the measurements are skipped.")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="calib {_e(__version__)}">
<meta name="calib-parameters-sha256" content="{file_sha256(inp.params_path)}">
<title>Calibration report: {_e(dev.get('name'))}</title>
<style>{CSS}</style></head>
<body><main>
<h1>Calibration report: {_e(dev.get('name'))}</h1>
<p class="sub">Parameter file <code>{_e(inp.params_path.name)}</code>, fitted {_e(pf.provenance.get('created_utc', '?'))}
with calib {_e(pf.provenance.get('toolkit_version', '?'))}; driver {_e(dev.get('driver_version') or 'unknown')}.</p>
<nav>{' '.join(f'<a href="#{k}">{_e(t)}</a>' for k, t in toc)}</nav>
<section id="glance"><h2>At a glance</h2>{_stat_cards(pf)}
<p>{n_params} parameters in {len(pf.sections)} model sections; {len(drawn)} figures drawn,
{len(skipped)} skipped. {data_line}</p></section>
<section id="warnings"><h2>Warnings</h2>
<p>What the fit and this report noticed: parameters on a bound (their standard error is missing or describes the
bound only), parameters the campaign cannot separate, and data the page could not use.</p>
{_warnings_html(pf, extra)}</section>
{''.join(blocks)}
<section id="parameters"><h2>Parameters</h2>
<p>Every parameter of the file. Standard errors come from the fit's Jacobian (scaled by the residual variance);
a parameter on a bound or one the data do not determine has none. Fixed parameters were not fitted.</p>
{table}</section>
{f'<section id="recovery"><h2>Recovery against the virtual GPU</h2>{rec_html}</section>' if rec_html else ''}
<section id="provenance"><h2>Provenance</h2>{_provenance_html(inp)}</section>
<footer>Generated by calib {_e(__version__)} on {now}. A static page: no scripts, no network; figures are PNG files in
<code>{FIG_DIR}/</code>.</footer>
</main></body></html>
"""
    (out_dir / INDEX).write_text(page, encoding="utf-8")
    return {"figures": drawn, "skipped": skipped, "parameters": n_params, "notes": notes}


def write_report(inp: ReportInputs, out_dir: str | os.PathLike, progress: Any = None) -> dict[str, Any]:
    """Render into a temporary directory beside ``out_dir`` and move it into place, so that an
    interrupted run leaves either the old report or the new one. An existing ``out_dir`` is replaced
    only when it is empty or holds a previous report (an ``index.html``)."""
    out_dir = Path(out_dir)
    if out_dir.exists():
        if not out_dir.is_dir():
            raise BadInputError(f"{out_dir}: exists and is not a directory")
        if any(out_dir.iterdir()) and not (out_dir / INDEX).is_file():
            raise BadInputError(f"{out_dir}: directory is not empty and holds no previous report; "
                                "choose a new or empty directory")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        summary = render_report(inp, tmp, progress) if progress is not None else render_report(inp, tmp)
        os.chmod(tmp, 0o755)
        if out_dir.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old.", dir=out_dir.parent))
            os.rename(out_dir, old / "r")
            os.rename(tmp, out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    summary["path"] = out_dir / INDEX
    return summary
