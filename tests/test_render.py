"""The sandboxed renderers: known LaTeX and HTML draw what they say; hostile answers end within their
limits as failed compiles and leave nothing behind."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from helmflow import render

needs_tex = pytest.mark.skipif(shutil.which("pdflatex") is None or shutil.which("pdftoppm") is None,
                               reason="needs TeX Live and poppler (texlive-latex-base, poppler-utils)")


@needs_tex
def test_latex_renders_a_cropped_equation_and_keeps_helms_text():
    out = render.render_latex("Here it is:\n```latex\n\\begin{equation}\\label{e} x^2 \\end{equation}\n```")
    assert out.error is None and out.image is not None
    w, h = out.image.size
    assert 10 < w < 400 and 10 < h < 200  # cropped to the ink, not a 1700x2200 page
    assert out.image.convert("L").getextrema()[0] < 128  # black ink
    assert out.text == "\\begin{equation*}\nx^2 \\end{equation*}"  # numbering and label removed, as HELM does


@needs_tex
def test_latex_that_does_not_compile_is_a_failed_compile():
    out = render.render_latex("\\begin{tabular}{c} \\undefinedcommand \\end{tabular}")
    assert out.image is None and "Undefined control sequence" in (out.error or "")


def compiles(keep: Path) -> list[str]:
    """The pdflatex runs of the one render kept under ``keep`` (a folder per compile)."""
    (folder,) = keep.iterdir()
    return sorted(p.name for p in folder.iterdir())


@needs_tex
def test_math_outside_math_mode_is_compiled_again_in_display_math_as_helm_repairs_it(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HELMFLOW_RENDER_KEEP", str(tmp_path / "bare"))
    bare = render.render_latex("```latex\nx^2 + \\alpha\n```")
    assert bare.error is None and compiles(tmp_path / "bare") == ["try-0", "try-1"]  # Missing $ inserted, then repaired
    assert bare.text == "$$\nx^2 + \\alpha\n$$"  # HELM compares the repaired document's text (the block's lines)
    monkeypatch.setenv("HELMFLOW_RENDER_KEEP", str(tmp_path / "displayed"))
    displayed = render.render_latex("$$x^2 + \\alpha$$")
    assert compiles(tmp_path / "displayed") == ["try-0"]
    assert bare.image.tobytes() == displayed.image.tobytes()


@needs_tex
@pytest.mark.parametrize("source, error, runs", [
    ("\\mathbb{R}", None, 2),  # "\\mathbb allowed only in math mode": repaired
    ("$a_b_c$", "Double subscript", 1),  # HELM's errors of the answer itself: never repaired
    ("\\left( x", "Missing \\right. inserted", 2),  # repaired into math mode, then one of those
    ("\\begin{foo}a\\end{foo}", "Environment foo undefined", 1),  # HELM's retry strips the package it adds
    ("x^2\n\ny", "Missing $ inserted", 4),  # a paragraph break in display math: HELM's three retries, then failed
])
def test_latex_errors_are_repaired_or_final_as_in_helm(tmp_path: Path, monkeypatch, source: str, error: str | None,
                                                       runs: int):
    monkeypatch.setenv("HELMFLOW_RENDER_KEEP", str(tmp_path))
    out = render.render_latex(source)
    assert (out.image is None) is (error is not None) and error in (out.error or "") if error else out.error is None
    assert len(compiles(tmp_path)) == runs


@needs_tex
@pytest.mark.parametrize("source", [
    "\\input{/etc/hostname}",  # an absolute path outside the scratch folder (openin_any = p)
    "\\input{../../../../etc/hostname}",  # a parent folder
])
def test_latex_cannot_read_outside_its_folder(source: str):
    out = render.render_latex(source, seconds=10)
    assert out.image is None and ".tex' not found" in (out.error or "")


@needs_tex
def test_latex_shell_escape_is_refused_and_never_runs(tmp_path: Path):
    marker = tmp_path / "ran"
    out = render.render_latex(f"\\immediate\\write18{{touch {marker}}}Hello", seconds=10)
    assert out.image is None and "write18" in (out.error or "")
    assert not marker.exists()


@needs_tex
def past_limit(limit: float) -> float:
    """The latest a render stopped at ``limit`` may end: stopping its processes and clearing its folder take a few
    seconds more, longer on a loaded machine."""
    return limit + 3 * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


def test_an_endless_tex_loop_ends_at_the_time_limit():
    out = render.render_latex("\\def\\x{\\x}\\x", seconds=2)
    assert out.image is None and "2 s limit" in (out.error or "")
    assert 2 <= out.seconds < past_limit(2), out


def ten_thousand_pages(ship: str) -> str:
    return f"\\count255=0 \\loop {ship}\\advance\\count255 by 1 \\ifnum\\count255<10000 \\repeat"


@needs_tex
@pytest.mark.parametrize("ship", [
    "x\\newpage",  # LaTeX's shipout hook stops the compile at page 101
    "\\pdfprimitive\\shipout\\hbox{x}",  # pdfTeX's primitive, past the hook: refused by the page count
])
def test_a_ten_thousand_page_document_is_a_failed_compile_within_its_limit(tmp_path: Path, monkeypatch, ship: str):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the render's scratch folder goes here
    out = render.render_latex(ten_thousand_pages(ship), seconds=20)
    assert out.image is None and f"past {render.MAX_PAGES} pages" in (out.error or ""), out.error
    assert out.seconds < 20
    assert list(tmp_path.iterdir()) == []  # the scratch folder is gone, nothing else was written


def test_page_files_refuse_names_outside_the_page():
    files = render.page_files('```json\n[{"filename": "index.html", "content": "<p>a</p>"}]\n```')
    assert files == {"index.html": "<p>a</p>"}
    for bad in ("/etc/x", "../x", "a/../../x"):
        with pytest.raises(render.RenderError, match="leaves"):
            render.page_files(json.dumps([{"filename": bad, "content": ""}]))
    with pytest.raises(render.RenderError, match="JSON"):
        render.page_files("<html>not json</html>")


def page(html: str, css: str = "") -> str:
    files = [{"filename": "index.html", "content": html}] + ([{"filename": "style.css", "content": css}] if css else [])
    return json.dumps(files)


@pytest.mark.slow
def test_a_page_with_its_stylesheet_is_screenshot_at_1920x1080():
    out = render.render_webpage(page('<html><head><link rel="stylesheet" href="style.css"></head>'
                                     "<body><h1>Prices</h1></body></html>",
                                     "body { background: rgb(0, 0, 255); margin: 0 }"))
    assert out.error is None and out.image is not None
    assert out.image.size == (1920, 1080)
    assert out.image.getpixel((1900, 1000)) == (0, 0, 255)  # the stylesheet was served from the folder
    assert out.text == "# Prices"


needs_jekyll = pytest.mark.skipif("render.jekyll_missing() is not None",
                                  reason="needs Jekyll and bubblewrap (apt-get install jekyll bubblewrap)")


@pytest.mark.slow
@needs_jekyll
def test_a_page_with_front_matter_and_liquid_is_built_by_jekyll_before_its_screenshot():
    liquid = ('---\ntitle: Blocks\n---\n<html><body style="margin:0">{% for i in (1..3) %}'
              '<div style="height:100px;background:rgb(0,0,{{ i | times: 80 }})">{{ page.title }}</div>'
              '{% endfor %}</body></html>')
    out = render.render_webpage(page(liquid))
    assert out.error is None and out.image.size == render.RESOLUTION
    assert [out.image.getpixel((5, 50 + 100 * k)) for k in range(3)] == [(0, 0, 80), (0, 0, 160), (0, 0, 240)]
    assert out.text == "Blocks\nBlocks\nBlocks"  # HELM reads the text of the page as built


@needs_jekyll
@pytest.mark.parametrize("liquid, error, seconds", [
    ("{% include_relative ../../etc/hostname %}", "Invalid syntax for include tag", 30),  # nothing outside the site
    ("{% for i in (1..100000000) %}{% for j in (1..1000) %}x{% endfor %}{% endfor %}", "2 s limit", 2),  # endless
])
def test_liquid_that_leaves_the_site_or_never_ends_is_a_failed_compile(liquid: str, error: str, seconds: float):
    out = render.render_webpage(page("---\n---\n" + liquid), seconds=seconds)
    assert out.image is None and error in (out.error or "")
    assert out.seconds < past_limit(seconds), out


def counting_server() -> tuple[http.server.HTTPServer, list[str]]:
    """A local HTTP server on a free port, serving in a thread, and the list of paths it was asked for."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, hits


@pytest.mark.slow
def test_a_page_that_fetches_a_remote_address_fails_and_reaches_nothing():
    server, hits = counting_server()
    try:
        url = f"http://127.0.0.1:{server.server_port}/leak"
        out = render.render_webpage(page(f"<html><body><img src='{url}'><script>fetch('{url}')</script></body></html>"),
                                    seconds=20)
    finally:
        server.shutdown()
    assert out.image is None and "other than its own" in (out.error or "")
    assert hits == []


@pytest.mark.slow
def test_a_page_that_loops_forever_ends_at_the_time_limit():
    out = render.render_webpage(page("<html><body><h1>x</h1><script>while (true) {}</script></body></html>"),
                                seconds=4)
    assert out.image is None and "4 s limit" in (out.error or "")
    assert out.seconds < past_limit(4) + 1, out


def _render_cgroups() -> set[str]:
    found = set()
    for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/memory")):
        if root.is_dir():
            found |= {p.name for p in root.rglob("helmflow-render-*") if p.is_dir()}
    return found


@pytest.mark.slow
def test_a_page_that_takes_more_memory_than_its_limit_fails_and_leaves_no_group():
    """Typed arrays live outside V8's heap limit: only the render's memory cgroup stops 6 GiB of them. CI runs
    as root, where helmflow can make one (below its own group, so a container's own cap still holds)."""
    before = _render_cgroups()
    bomb = ("<html><body><h1>x</h1><script>const keep = [];"
            "for (let i = 0; i < 96; i++) { const a = new Uint8Array(64 << 20); a.fill(1); keep.push(a); }"
            "document.querySelector('h1').textContent = 'kept ' + keep.length;</script></body></html>")
    out = render.render_webpage(page(bomb), seconds=25)
    assert out.image is None and f"{render.PAGE_MEMORY >> 20:,} MiB memory limit" in (out.error or ""), out.error
    # the group is removed with the render (another worker's render may hold its own group for a moment)
    deadline = time.monotonic() + 60
    while not _render_cgroups() <= before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _render_cgroups() <= before
    # a page within the limit still renders under the same cgroup
    fine = render.render_webpage(page("<html><body><h1>Fine</h1></body></html>"), seconds=25)
    assert fine.error is None and fine.text == "# Fine"


@pytest.mark.slow
def test_a_render_whose_process_the_memory_limit_killed_and_that_then_waits_reports_the_memory_limit(tmp_path: Path):
    """The kernel may kill any process of the group (Chromium's renderer, or its GPU or network process) and leave
    the rest waiting until the clock runs out: that render failed on memory, not on time."""
    hog = "python3 -c 'x = bytearray(1 << 30); x[::4096] = b\"1\" * len(x[::4096])'; sleep 60"
    with pytest.raises(render.RenderError) as failed:
        render.sandboxed(["sh", "-c", hog], tmp_path, 4, ram=128 << 20)
    assert not isinstance(failed.value, render.TimeLimit) and "128 MiB memory limit" in str(failed.value)
    # without the memory limit the same wait is the time limit
    with pytest.raises(render.TimeLimit):
        render.sandboxed(["sh", "-c", "sleep 60"], tmp_path, 2, ram=128 << 20)


needs_lilypond = pytest.mark.skipif("render.lilypond_missing() is not None",
                                    reason="needs LilyPond and bubblewrap (apt-get install lilypond bubblewrap)")
VERSION = '\\version "2.24.0"\n'


@needs_lilypond
@pytest.mark.slow
def test_lilypond_engraves_a_cropped_sheet_and_a_score_without_a_version_fails_as_in_helm():
    out = render.render_lilypond(VERSION + "{ c'4 e'4 g'2 }")
    assert out.error is None and out.image is not None and out.text is None  # no source text to compare
    w, h = out.image.size
    assert 20 < w < 400 and 20 < h < 200  # cropped to the staff, not an A4 page
    assert out.image.convert("L").getextrema()[0] < 128
    failed = render.render_lilypond("{ c'4 }")  # HELM's convert-ly -e refuses a file with no \version
    assert failed.image is None and "convert-ly" in (failed.error or "")


@needs_lilypond
def test_lilypond_scheme_reaches_no_network_and_no_file_outside_its_jail(tmp_path: Path):
    """LilyPond runs the answer's Scheme: it may try to connect out, write and read host files. In the jail
    the connection goes nowhere, the host's folders do not exist, and reading one is a failed compile."""
    server, hits = counting_server()
    marker, secret = tmp_path / "written", tmp_path / "secret"
    secret.write_text("key")
    try:
        out = render.render_lilypond(
            VERSION
            + f'#(system "touch {marker}; wget -q -O- http://127.0.0.1:{server.server_port}/a")\n'
            + '#(let ((s (socket PF_INET SOCK_STREAM 0))) (connect s AF_INET (inet-pton AF_INET "127.0.0.1") '
            + f'{server.server_port}) (display "GET /leak HTTP/1.0\\r\\n\\r\\n" s))\n'
            + f'#(display (ly:gulp-file "{secret}"))\n' + "{ c'4 }")
    finally:
        server.shutdown()
    assert hits == [] and not marker.exists()
    assert out.image is None and "cannot find file" in (out.error or ""), out.error


@needs_lilypond
@pytest.mark.slow
def test_an_endless_scheme_loop_ends_at_the_time_limit():
    out = render.render_lilypond(VERSION + "#(let loop () (loop))\n{ c'4 }", seconds=3)
    assert out.image is None and "3 s limit" in (out.error or "")
    assert out.seconds < past_limit(3), out


@needs_lilypond
def test_a_score_that_writes_a_huge_file_is_stopped_at_the_file_limit(monkeypatch, tmp_path: Path):
    import tempfile

    monkeypatch.setattr(render, "MAX_FILE", 1 << 20)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    out = render.render_lilypond(VERSION + '#(call-with-output-file "big" (lambda (p) (let loop () '
                                 '(display (make-string 4096 #\\x) p) (loop))))\n{ c\'4 }', seconds=60)
    assert out.image is None and out.seconds < 60, out.error  # killed by the file-size limit, not the clock
    assert list(tmp_path.iterdir()) == []
