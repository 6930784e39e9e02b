"""Render a model's structured answer (LaTeX, a web page, a LilyPond music sheet) to an image, in a sandbox.

The answer is untrusted code. Each render runs in a child process in its own scratch folder, with a
wall-clock limit (the whole process group is killed when it passes), CPU-time, file-size and (for TeX)
address-space limits (Chromium, which reserves terabytes of address space, gets a memory cgroup of
:data:`PAGE_MEMORY` instead where the machine lets helmflow make one, and V8's heap flag everywhere), an
environment of PATH and HOME only (no credentials the evaluator holds), and,
where the kernel allows it, a network namespace of its own (``unshare --net``: no interface but a downed
loopback). TeX runs with ``-no-shell-escape`` and kpathsea's paranoid ``openin_any``/``openout_any``, so
``\\input`` and ``\\openout`` cannot leave the scratch folder; a document that still asks for a shell
command (``\\write18``) is a failed compile. The web page is served to headless Chromium from the
folder by request interception, with every other request aborted (and a dead proxy behind that).

A render that fails, overruns its limit or produces no image gives ``image=None`` (HELM: the
completion did not compile). :data:`VERSIONS` is part of the Image2Struct metric versions, so a stored
score is keyed on the completion and the renderer that drew it."""

from __future__ import annotations

import contextlib
import functools
import glob
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VERSIONS = {"latex": "3", "webpage": "2", "lilypond": "1"}  # bump when a renderer can draw a completion differently
LATEX_SECONDS = 30.0
WEBPAGE_SECONDS = 30.0
TEX_MEMORY = 1 << 30  # bytes of address space for pdflatex and pdftoppm
PAGE_MEMORY = 2 << 30  # bytes of RAM for Chromium and its children (a memory cgroup; see _memory_cgroup)
PAGE_HEAP_MB = 512  # V8's old-space limit for the page's scripts, where no cgroup can be made
MAX_FILE = 64 << 20  # bytes any file a render writes may reach
MAX_PAGES = 100  # pages a LaTeX answer may typeset; past it the compile stops and fails (HELM has no limit)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                 f"--js-flags=--max-old-space-size={PAGE_HEAP_MB}"]
LILYPOND_SECONDS = 60.0  # HELM sets none; one bar takes about 1 s of CPU (Guile, fonts, Ghostscript)
LILYPOND_MEMORY = 2 << 30  # bytes of address space for convert-ly, LilyPond and Ghostscript
RESOLUTION = (1920, 1080)  # HELM's ScreenshotOptions
ORIGIN = "http://localhost:4000/"  # where the page appears to be served (Jekyll's default address in HELM)


@dataclass
class Rendered:
    image: Any | None  # PIL image; None when the completion did not compile
    text: str | None  # the structure's text HELM compares for edit similarity (None when not compiled)
    error: str | None
    seconds: float


class RenderError(Exception):
    """The completion did not compile (bad source, a sandbox limit, a forbidden request)."""


class TimeLimit(RenderError):
    """A render ran past its wall-clock limit (its processes were killed)."""


class SandboxUnavailable(RenderError):
    """A limit the sandbox was asked for cannot be set up on this machine (nothing was run)."""


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[str]:
    """A render's scratch folder in the system's temporary folder (a short path: Chromium's sockets live
    there), removed afterwards, or moved under ``$HELMFLOW_RENDER_KEEP`` (the answer as written, TeX's log, the
    screenshot) for inspection; one folder per renderer run, so the folders kept also count them."""
    from helmflow.settings import settings

    keep = settings().render_keep
    folder = tempfile.mkdtemp(prefix=prefix)
    try:
        yield folder
    finally:
        moved = False
        if keep:
            try:
                Path(keep).mkdir(parents=True, exist_ok=True)
                shutil.move(folder, Path(keep) / Path(folder).name)
                moved = True
            except (OSError, shutil.Error):
                pass
        if not moved:
            shutil.rmtree(folder, ignore_errors=True)


# ---- the sandbox -------------------------------------------------------------------------------------------

@functools.cache
def _can_unshare() -> bool:
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    try:
        return subprocess.run([unshare, "--net", "--", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _limits(cpu_seconds: float, memory: int | None, processes: int | None = None, max_file: int | None = None):
    def apply() -> None:
        cpu = max(1, int(cpu_seconds) + 1)
        size = MAX_FILE if max_file is None else max_file
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        if processes is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))

    return apply


def _processes_of(uid: int) -> int:
    """How many processes the user ``uid`` has now (the kernel's process limit counts them all)."""
    count = 0
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += 1
    return count


def sandboxed(cmd: list[str], cwd: Path, seconds: float, memory: int | None = None,
              env: dict[str, str] | None = None, ram: int | None = None, processes: int | None = None,
              max_file: int | None = None) -> tuple[int, str]:
    """Run ``cmd`` in ``cwd`` under the limits above; (exit code, combined output). Raises RenderError
    when it overruns ``seconds`` (the process group is killed) or, with ``ram``, when its processes together
    went past ``ram`` bytes of memory (a memory cgroup, where one can be made).

    ``processes``: at most that many processes at once, ``cmd``'s and all it starts: a pids cgroup when the
    evaluator runs as root (whose processes no process limit counts; RenderError where none can be made),
    else the user's process limit, over the processes the user has already. ``max_file``: the largest file
    it may write, instead of :data:`MAX_FILE`."""
    base = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(cwd), "LANG": "C.UTF-8", "TMPDIR": str(cwd)}
    full = ["unshare", "--net", "--", *cmd] if _can_unshare() else cmd
    nproc = None
    if processes is not None and os.geteuid() != 0:
        nproc = processes + _processes_of(os.geteuid())
    with _memory_cgroup(ram) as group, _pids_cgroup(processes if os.geteuid() == 0 else None) as pids:
        limits = _limits(seconds, memory, nproc, max_file)

        def enter() -> None:
            if group is not None:
                group.join()
            if pids is not None:
                pids.join()
            limits()

        proc = subprocess.Popen(full, cwd=cwd, env={**base, **(env or {})}, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=enter)
        try:
            out, _ = proc.communicate(timeout=seconds)
        except subprocess.TimeoutExpired:
            _kill(proc)
            if group is not None and group.hit_limit():  # the kernel killed one of its processes (Chromium's
                # renderer, its GPU or network process) and what was left waited for it until the clock ran out
                raise RenderError(f"render exceeded its {(ram or 0) / (1 << 20):,.0f} MiB memory limit") from None
            raise TimeLimit(f"render exceeded its {seconds:g} s limit") from None
        finally:
            if _session_members(proc.pid):  # nothing a render started outlives it
                _kill(proc)
        if group is not None and group.hit_limit():
            raise RenderError(f"render exceeded its {(ram or 0) / (1 << 20):,.0f} MiB memory limit")
        if proc.returncode in (-signal.SIGKILL, -signal.SIGXCPU):  # its CPU-time limit, set from ``seconds``: on
            # a loaded machine the process can spend it before this thread wakes at the clock's limit
            raise TimeLimit(f"render exceeded its {seconds:g} s limit")
    return proc.returncode, out.decode("utf-8", "replace")


class _Group:
    """One render's memory cgroup (v2, or v1's memory controller)."""

    def __init__(self, path: Path, v2: bool):
        self.path, self.v2 = path, v2

    def join(self) -> None:
        """Called in the child before it execs: the child and everything it starts are counted."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def hit_limit(self) -> bool:
        try:
            name = "memory.events" if self.v2 else "memory.oom_control"  # reclaiming page cache is no failure
            events = dict(line.split()[:2] for line in (self.path / name).read_text().splitlines() if " " in line)
            return int(events.get("oom_kill", 0)) > 0
        except (OSError, ValueError):
            return False


def _own_cgroup(v2: bool, controller: str = "memory") -> Path | None:
    """Where this process sits in the hierarchy: a render's group goes below it, inside whatever caps it."""
    root = Path("/sys/fs/cgroup") if v2 else Path("/sys/fs/cgroup") / controller
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, where = line.split(":", 2)
            if (v2 and controllers == "") or (not v2 and controller in controllers.split(",")):
                return root / where.lstrip("/")
    except (OSError, ValueError):
        return None
    return None


@contextlib.contextmanager
def _pids_cgroup(limit: int | None) -> Iterator[_Group | None]:
    """A pids cgroup letting a sandbox's processes number at most ``limit``, removed afterwards (None without
    a limit); RenderError when this machine does not let helmflow make one."""
    if limit is None:
        yield None
        return
    v2 = Path("/sys/fs/cgroup/cgroup.controllers").is_file()
    parent = _own_cgroup(v2, "pids")
    path = None if parent is None else parent / f"helmflow-sandbox-{uuid.uuid4().hex[:12]}"
    try:
        if path is None:
            raise OSError("no pids controller")
        path.mkdir()
        (path / "pids.max").write_text(str(limit))
    except OSError as e:
        if path is not None:
            with contextlib.suppress(OSError):
                path.rmdir()
        raise SandboxUnavailable(f"cannot limit the sandbox's processes: no pids cgroup can be made here "
                                 f"({e})") from None
    try:
        yield _Group(path, v2)
    finally:
        _remove_group(path)


@contextlib.contextmanager
def _memory_cgroup(limit: int | None) -> Iterator[_Group | None]:
    """A memory cgroup capping a render's processes at ``limit`` bytes of RAM, removed afterwards; None when
    there is no limit or this machine does not let helmflow make one (not root, no writable cgroup hierarchy)."""
    group = None
    if limit is not None:
        v2 = Path("/sys/fs/cgroup/cgroup.controllers").is_file()
        parent = _own_cgroup(v2)
        if parent is not None:
            path: Path | None = parent / f"helmflow-render-{uuid.uuid4().hex[:12]}"
            try:
                Path(str(path)).mkdir()
            except OSError:
                path = None
            if path is not None:
                try:
                    if v2:
                        (path / "memory.max").write_text(str(limit))
                        with contextlib.suppress(OSError):
                            (path / "memory.swap.max").write_text("0")
                    else:
                        (path / "memory.limit_in_bytes").write_text(str(limit))
                        with contextlib.suppress(OSError):
                            (path / "memory.memsw.limit_in_bytes").write_text(str(limit))
                    group = _Group(path, v2)
                except OSError:
                    with contextlib.suppress(OSError):
                        path.rmdir()
    try:
        yield group
    finally:
        if group is not None:
            _remove_group(group.path)


#: how long a finished sandbox's cgroup may take to empty before it is given up on (a loaded machine reaps its
#: killed processes late)
GROUP_REMOVAL_SECONDS = 20.0


def _remove_group(path: Path) -> None:
    """Remove a sandbox's cgroup: kill what is still in it (nothing should be), then retry until its last
    process has been reaped and the kernel lets the directory go."""
    deadline = time.monotonic() + GROUP_REMOVAL_SECONDS
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
        with contextlib.suppress(OSError, ValueError):
            for pid in (path / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(int(pid), signal.SIGKILL)
        time.sleep(0.05)


def _kill(proc: subprocess.Popen) -> None:
    """Kill the render's whole session (its process group, and any child that made a group of its own)."""
    for _ in range(2):
        for pid in [proc.pid, *_session_members(proc.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)
    proc.wait()


def _session_members(sid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if entry.name.isdigit():
            try:
                if os.getsid(int(entry.name)) == sid:
                    out.append(int(entry.name))
            except (ProcessLookupError, PermissionError):
                pass
    return out


def _between(text: str, delimiters: list[tuple[str, str]]) -> str:
    """HELM's annotators: the first delimited block (```latex / ```json, else ```), or the whole text."""
    for start, end in delimiters:
        if start in text and end in text[text.index(start) + len(start):]:
            begin = text.index(start) + len(start)
            return text[begin:text.index(end, begin)]
    return text


def _timed(fn, *args: Any) -> Rendered:
    started = time.perf_counter()
    try:
        image, text = fn(*args)
    except RenderError as e:
        return Rendered(None, None, str(e), time.perf_counter() - started)
    return Rendered(image, text, None, time.perf_counter() - started)


# ---- LaTeX (HELM utils_latex.py) ------------------------------------------------------------------------

# HELM's TEX_INCLUDES as far as Debian's texlive-latex-base has them (HELM installs "latex-full";
# xcolor, algorithm*, listings, tikz/pgfplots, threeparttable and adjustbox are not in that package)
TEX_INCLUDES = "\n\\usepackage{amsmath,amssymb,amsfonts}\n\\usepackage{graphicx}\n\\usepackage{amsmath}\n"
TEX_BEGIN_FILE = r"\documentclass{article}"
TEX_BEGIN_DOCUMENT = r"\begin{document}"
TEX_END_DOCUMENT = r"\end{document}"
TEX_REPLACE_NUMBERING = [("{equation}", "{equation*}"), ("{align}", "{align*}"), ("{alignat}", "{alignat*}"),
                         ("{gather}", "{gather*}"), ("{flalign}", "{flalign*}"), ("{multline}", "{multline*}"),
                         ("{eqnarray}", "{eqnarray*}"), ("{subeqnarray}", "{subeqnarray*}"),
                         ("{aligneq}", "{aligneq*}")]


#: run before the document (on pdflatex's command line, so the text HELM compares is the answer's): the
#: compile stops with an error once a page past MAX_PAGES is shipped out
PAGE_GUARD = (r"\AddToHook{shipout/after}{\ifnum\ReadonlyShipoutCounter>" + str(MAX_PAGES)
              + r" \errmessage{the document runs past " + str(MAX_PAGES) + r" pages}\fi}")


def latex_document(code: str) -> str:
    """HELM ``latex_to_image``'s preprocessing: unnumbered environments, no labels, begin/end document
    added when missing, HELM's document class and preamble in place of the answer's."""
    for old, new in TEX_REPLACE_NUMBERING:
        code = code.replace(old, new)
    code = re.sub(r"\\label\{.*?\}[\t ]*(\n)?", "", code)
    if TEX_BEGIN_DOCUMENT not in code and TEX_BEGIN_FILE not in code:
        code = TEX_BEGIN_DOCUMENT + code
    if TEX_END_DOCUMENT not in code:
        code = code + TEX_END_DOCUMENT
    found = re.search(r"\\documentclass(\[.*?\])?\{.*?\}", code) or re.search(r"\\documentstyle(\[.*?\])?\{.*?\}", code)
    code = code.replace(found.group(), TEX_BEGIN_FILE) if found else TEX_BEGIN_FILE + "\n\n" + code
    code = re.sub(r"\\usepackage(\[.*?\])?\{.*\}", "", code)
    return code.replace(TEX_BEGIN_FILE, TEX_BEGIN_FILE + "\n" + TEX_INCLUDES + "\n")


def strip_latex(code: str) -> str:
    """HELM ``strip_unnecessary_latex_parts`` (its comment removal is overwritten by the next line, so
    comments stay, as in HELM): the text edit similarity compares."""
    out = re.sub(r"\\documentclass(\[.*?\])?\{.*?\}", "", code)
    out = re.sub(r"\\documentstyle(\[.*?\])?\{.*?\}", "", out)
    out = re.sub(r"\\usepackage(\[.*?\])?\{.*?\}", "", out)
    out = re.sub(r"\\begin\{document\}\n*", "", out, flags=re.DOTALL)
    out = re.sub(r"\\end\{document\}.*", "", out, flags=re.DOTALL)
    out = re.sub(r"(\\begin\{.*?\}(\[.*?\])?)(?!\n)", r"\1\n", out)
    out = re.sub(r"(\\end\{.*?\})(?!\n)", r"\1\n", out)
    out = re.sub(r" +", " ", out)
    out = re.sub(r"\t", " ", out)
    out = re.sub(r"^[ \t]+|[ \t]+$", "", out, flags=re.MULTILINE)
    out = re.sub(r"\n\s*\n", "\n", out)
    return out.strip()


#: HELM's MAX_NUM_TRIES: compiles after the first that ``latex_repair`` may ask for
LATEX_RETRIES = 3
#: HELM ``handle_latex_error``'s errors "caused by the original LaTeX code itself": one of these anywhere in
#: the log (its lines joined) is a failed compile, never repaired
TEX_UNFIXABLE = ("Undefined control sequence", r"LaTeX Error: Lonely \item--perhaps a missing list environment.",
                 "Missing } inserted", "Missing { inserted", "Double subscript.", "LaTeX Error: Not in outer par mode.",
                 r"Extra alignment tab has been changed to \cr.", "Missing \\", r"LaTeX Error: \begin{",
                 r"Misplaced \noalign", " already defined.")


class LatexFailed(RenderError):
    """pdflatex stopped on an error; ``log`` is its log file (what HELM's ``LatexBuildError`` carries)."""

    def __init__(self, message: str, log: str):
        super().__init__(message)
        self.log = log


def latex_repair(document: str, log: str) -> str | None:
    r"""HELM ``handle_latex_error``: the document to compile again after the error in ``log``, or None.

    An error of :data:`TEX_UNFIXABLE` is final. Math outside math mode ("Missing $ inserted", "... allowed
    only in math mode") is repaired by putting the whole body in ``$$ ... $$``. HELM also adds
    ``\usepackage{<env>}`` for an undefined environment, but its retry takes every ``\usepackage`` out again
    (the preamble step of ``latex_to_image``), so that retry compiles the same document and fails: here it
    fails at once, with the same outcome."""
    joined = log.replace("\n", "")
    if any(message in joined for message in TEX_UNFIXABLE):
        return None
    if "Missing $ inserted" in log or " allowed only in math mode" in joined:
        fixed = re.sub(r"(?<=\\begin{document})(.*?)(?=\\end{document})", r"$$\1$$", document, flags=re.DOTALL)
        return fixed if fixed != document else None
    return None


def _compile_latex(document: str, folder: Path, seconds: float) -> Any:
    """pdflatex, then pdftoppm, in ``folder``: the first page as a PIL image, before HELM's crop."""
    from PIL import Image

    started = time.monotonic()
    folder.mkdir()
    (folder / "main.tex").write_text(document)
    env = {"openin_any": "p", "openout_any": "p", "shell_escape": "f", "TEXMFOUTPUT": str(folder),
           "TEXMFVAR": str(folder), "TEXMFCONFIG": str(folder)}
    code, log = sandboxed(["pdflatex", "-no-shell-escape", "-interaction=nonstopmode", "-halt-on-error",
                           "-jobname=main", PAGE_GUARD + r"\input{main.tex}"], folder, seconds, TEX_MEMORY, env)
    logfile = folder / "main.log"
    texlog = logfile.read_text(encoding="latin-1") if logfile.is_file() else ""  # HELM decodes it as latin-1
    log += texlog
    if "runsystem(" in log:
        raise RenderError("the document asks to run a shell command (\\write18)")
    written = re.search(r"Output written on main\.pdf \((\d+) pages?", log)
    if written and int(written.group(1)) > MAX_PAGES:  # a document that shipped pages past the guard
        raise RenderError(f"the document runs past {MAX_PAGES} pages ({written.group(1)})")
    if code != 0 or not (folder / "main.pdf").is_file():
        errors = [line for line in log.splitlines() if line.startswith("!")]
        raise LatexFailed(errors[0] if errors else f"pdflatex exited with {code}", texlog)
    left = max(1.0, seconds - (time.monotonic() - started))
    code, log = sandboxed(["pdftoppm", "-f", "1", "-l", "1", "-r", "200", "-png", "main.pdf", "page"],
                          folder, left, TEX_MEMORY)
    pages = sorted(folder.glob("page*.png"))
    if code != 0 or not pages:
        raise RenderError(f"pdftoppm exited with {code}")
    with Image.open(pages[0]) as page:
        return page.convert("RGB")


def _latex(completion: str, seconds: float) -> tuple[Any, str]:
    from PIL import ImageOps

    document = latex_document(_between(completion.strip(), [("```latex", "```"), ("```", "```")]))
    started = time.monotonic()
    with scratch("helmflow-tex-") as folder:
        for attempt in range(LATEX_RETRIES + 1):  # each compile in a fresh folder, as HELM's build_pdf
            left = seconds - (time.monotonic() - started)
            try:
                if left <= 0:
                    raise TimeLimit("no time left")
                image = _compile_latex(document, Path(folder) / f"try-{attempt}", left)
                break
            except TimeLimit:  # the limit is the whole render's, whichever compile reached it
                raise TimeLimit(f"render exceeded its {seconds:g} s limit") from None
            except LatexFailed as e:
                fixed = latex_repair(document, e.log) if attempt < LATEX_RETRIES else None
                if fixed is None:
                    raise RenderError(str(e)) from None
                document = latex_document(fixed)  # HELM compiles the repair through latex_to_image again
    w, h = image.size  # HELM pdf_to_image(crop=True): drop the page number, then the white border
    image = image.crop((0, 0, w, h - int(h * 0.2)))
    box = ImageOps.invert(image).getbbox()
    if box is None:
        raise RenderError("the document renders to an empty page")
    return image.crop(box), strip_latex(document)


def render_latex(completion: str, seconds: float = LATEX_SECONDS) -> Rendered:
    """Compile a LaTeX answer with pdflatex and rasterise its first page at 200 dpi (HELM's pdf2image
    default), cropped as HELM crops it; a compile error HELM repairs is compiled again repaired (at most
    :data:`LATEX_RETRIES` times, all within ``seconds``)."""
    return _timed(_latex, completion, seconds)


# ---- web pages (HELM webpage_compiler_annotator.py) ----------------------------------------------------

def page_files(completion: str) -> dict[str, str]:
    """The answer as files: HELM asks for a JSON list of {"filename", "content"}; a name that would
    leave the page's folder is refused."""
    try:
        structure = json.loads(_between(completion.strip(), [("```json", "```"), ("```", "```")]))
    except json.JSONDecodeError as e:
        raise RenderError(f"the answer is not a JSON list of files: {e}") from None
    if not isinstance(structure, list):
        raise RenderError("the answer should be a list of files")
    files: dict[str, str] = {}
    for item in structure:
        name = item.get("filename") if isinstance(item, dict) else None
        content = item.get("content") if isinstance(item, dict) else None
        if not isinstance(name, str) or not isinstance(content, str):
            raise RenderError("each file should have a filename and a content")
        parts = Path(name).parts
        if not parts or Path(name).is_absolute() or ".." in parts:
            raise RenderError(f"file name {name!r} leaves the page's folder")
        files[name] = content
    return files


def html_text(html: str) -> str:
    """HELM ``convert_html_to_text``: html2text (links ignored), whitespace normalised."""
    from html2text import HTML2Text

    handler = HTML2Text()
    handler.ignore_links = True
    text = handler.handle(html)
    text = re.sub(r" +", " ", text)
    text = re.sub(r"\t", " ", text)
    text = re.sub(r"^[ \t]+|[ \t]+$", "", text, flags=re.MULTILINE)
    return re.sub(r"\n\s*\n", "\n", text).strip()


def _webpage(completion: str, assets: dict[str, bytes], seconds: float) -> tuple[Any, str]:
    from PIL import Image

    files = page_files(completion)
    with scratch("helmflow-page-") as folder:
        site = Path(folder) / "site"
        for name, data in assets.items():
            (site / name).parent.mkdir(parents=True, exist_ok=True)
            (site / name).write_bytes(data)
        for name, content in files.items():
            if name in assets:
                continue  # HELM keeps the dataset's assets over the answer's
            (site / name).parent.mkdir(parents=True, exist_ok=True)
            (site / name).write_text(content)
        site.mkdir(exist_ok=True)
        why = jekyll_missing()
        if why is not None:
            raise RendererMissing(f"web pages are built with Jekyll in a jail; this machine {why}")
        started = time.monotonic()
        code, log = sandboxed([*JAIL, "--bind", folder, "/sheet", "--", *JEKYLL_BUILD], Path(folder), seconds,
                              JEKYLL_MEMORY)
        built = Path(folder) / "_site"
        if code != 0 or not built.is_dir():
            errors = [line.strip() for line in log.splitlines() if "error" in line.lower()]
            raise RenderError(f"Jekyll did not build the page: {(errors or [f'exit {code}'])[0][:300]}")
        left = max(1.0, seconds - (time.monotonic() - started))
        try:
            code, log = sandboxed([sys.executable, "-m", "helmflow.render", str(built), "shot.png", str(left)],
                                  Path(folder), left, None, ram=PAGE_MEMORY)
        except TimeLimit:  # the limit is the whole render's: the build and the screenshot
            raise TimeLimit(f"render exceeded its {seconds:g} s limit") from None
        shot = Path(folder) / "shot.png"
        if code != 0 or not shot.is_file():
            last = [line for line in log.strip().splitlines() if line.strip()]
            raise RenderError(f"the page did not render: {last[-1] if last else f'exit {code}'}")
        with Image.open(shot) as img:
            image = img.convert("RGB")
        html = (Path(folder) / "shot.html").read_text()
    return image, html_text(html)


def render_webpage(completion: str, assets: dict[str, bytes] | None = None,
                   seconds: float = WEBPAGE_SECONDS) -> Rendered:
    """Build the answer's files with Jekyll (as HELM's ``jekyll serve`` does: front matter and Liquid are
    processed, other files copied) in the jail, then screenshot ``index.html`` of the built site in headless
    Chromium at 1920x1080, both within ``seconds``."""
    return _timed(_webpage, completion, assets or {}, seconds)


def _screenshot(site: Path, out: Path, seconds: float) -> None:
    """The child process: serve ``site`` by interception, abort everything else, screenshot."""
    from playwright.sync_api import sync_playwright

    root = site.resolve()
    refused: list[str] = []

    def handle(route: Any) -> None:
        url = route.request.url.split("#")[0].split("?")[0]
        if not url.startswith(ORIGIN):
            refused.append(url)
            route.abort()
            return
        rel = url[len(ORIGIN):] or "index.html"
        path = (root / rel).resolve()
        if path.is_dir():
            path = path / "index.html"
        if root in path.parents and path.is_file():
            route.fulfill(path=str(path))
        else:
            route.fulfill(status=404, body="")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                    proxy={"server": "http://127.0.0.1:9"})
        context = browser.new_context(viewport={"width": RESOLUTION[0], "height": RESOLUTION[1]},
                                      service_workers="block")
        context.route("**/*", handle)
        page = context.new_page()
        page.goto(ORIGIN, wait_until="load", timeout=seconds * 1000)
        page.screenshot(path=str(out), timeout=seconds * 1000)
        out.with_suffix(".html").write_text(page.content())
        browser.close()
    if refused:
        out.unlink()
        sys.exit(f"the page requested an address other than its own: {refused[0][:200]}")


# ---- music sheets (HELM lilypond_compiler_annotator.py) --------------------------------------------------

class RendererMissing(RuntimeError):
    """A renderer this machine cannot run (a missing program, no way to make its jail): never a score of 0."""


#: the jail a LilyPond answer runs in (bubblewrap): the system's programs and fonts read-only, the scratch
#: folder as /sheet (the only writable place besides an empty /tmp), every namespace of its own (no network,
#: no other process, no host user), an empty environment, the unprivileged user nobody
JAIL = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
        "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin",
        "--ro-bind", "/etc/fonts", "/etc/fonts", "--ro-bind-try", "/var/cache/fontconfig", "/var/cache/fontconfig",
        "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
        "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--chdir", "/sheet",
        "--setenv", "HOME", "/sheet", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
        "--uid", "65534", "--gid", "65534"]
#: HELM runs convert-ly -e (a failure is a failed compile), then lilypond --png, whose exit code it ignores
#: (LilyPond draws what it can of a partly wrong score): a missing main.png is the failed compile
LILYPOND_SCRIPT = ("convert-ly -e main.ly || { echo 'convert-ly failed'; exit 3; }; "
                   "lilypond --png -o main main.ly; exit 0")


@functools.cache
def _lilypond_ccache() -> list[str]:
    """Debian's LilyPond ships its Scheme byte-compiled but does not point Guile at it: told where it is,
    LilyPond starts in under a second of CPU instead of four (the same code, compiled ahead)."""
    found = sorted(glob.glob("/usr/lib/*/lilypond/*/ccache"))
    return ["--setenv", "GUILE_LOAD_COMPILED_PATH", found[-1]] if found else []


#: HELM serves the page's folder with ``jekyll serve``, which builds it into ``_site`` first: helmflow runs that
#: build in the jail, with ``--safe`` (no plugins of the answer's own) and no disk cache
JEKYLL_BUILD = ["jekyll", "build", "--safe", "--disable-disk-cache", "--source", "site", "--destination", "_site"]
JEKYLL_MEMORY = 2 << 30  # bytes of address space for Ruby


@functools.cache
def lilypond_missing() -> str | None:
    """Why LilyPond answers cannot be rendered here (None when they can): LilyPond, convert-ly and
    bubblewrap must be installed and the jail must start (it needs user namespaces, or root)."""
    missing = [p for p in ("lilypond", "convert-ly", "bwrap") if shutil.which(p) is None]
    if missing:
        return f"needs {', '.join(missing)}: apt-get install lilypond bubblewrap"
    return _jail_problem()


@functools.cache
def jekyll_missing() -> str | None:
    """Why web page answers cannot be built here (None when they can): Jekyll and bubblewrap must be
    installed and the jail must start."""
    missing = [p for p in ("jekyll", "bwrap") if shutil.which(p) is None]
    if missing:
        return f"needs {', '.join(missing)}: apt-get install jekyll bubblewrap"
    return _jail_problem()


@functools.cache
def _jail_problem() -> str | None:
    with tempfile.TemporaryDirectory(prefix="helmflow-jail-") as probe:
        try:
            proc = subprocess.run([*JAIL, "--bind", probe, "/sheet", "--", "true"], capture_output=True,
                                  timeout=30, env={"PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"bubblewrap cannot start its jail: {e}"
    if proc.returncode != 0:
        return f"bubblewrap cannot start its jail: {proc.stderr.decode(errors='replace').strip()[:200]}"
    return None


def _lilypond(completion: str, seconds: float) -> tuple[Any, None]:
    from PIL import Image, ImageOps

    why = lilypond_missing()
    if why is not None:
        raise RendererMissing(f"LilyPond answers render only in a jail; this machine {why}")
    with scratch("helmflow-ly-") as sheet_dir:
        folder = Path(sheet_dir)
        (folder / "main.ly").write_text(completion.strip())  # HELM writes the stripped completion as it is
        code, log = sandboxed([*JAIL, *_lilypond_ccache(), "--bind", sheet_dir, "/sheet", "--", "sh", "-c",
                               LILYPOND_SCRIPT],
                              folder, seconds, LILYPOND_MEMORY)
        sheet = folder / "main.png"  # a score of several pages is main-page1.png, ...: a failed compile in HELM
        if code != 0 or not sheet.is_file():
            lines = log.splitlines()
            errors = ([line for line in lines if line.startswith("fatal error")]  # what stopped it, first
                      or [line for line in lines if "error" in line.lower() or "failed" in line])
            raise RenderError(errors[0][:300] if errors else "lilypond did not generate the image")
        with Image.open(sheet) as img:
            image = img.convert("RGB")
    w, h = image.size  # HELM: drop the pagination, then the white border
    image = image.crop((0, 0, w, h - int(h * 0.2)))
    box = ImageOps.invert(image).getbbox()
    if box is None:
        raise RenderError("the score renders to an empty page")
    return image.crop(box), None


def render_lilypond(completion: str, seconds: float = LILYPOND_SECONDS) -> Rendered:
    """Engrave a LilyPond answer to PNG (HELM: ``convert-ly -e``, then ``lilypond --png``) in a bubblewrap
    jail, cropped as HELM crops it. Music sheets have no reference source: no text for edit similarity."""
    return _timed(_lilypond, completion, seconds)


if __name__ == "__main__":
    _screenshot(Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3]))
