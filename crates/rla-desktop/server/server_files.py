"""The session folder's files: OSWorld's paths mapped into it and confined to it (links
resolved), the conversions any code that is not allowed may run (`checked_conversion`), and
`POST /setup/upload` and `POST /file`."""

import os
import re

from server_common import BadRequest, Refused

# what `libreoffice --convert-to FORMAT` may convert to when any code is not allowed (the part
# of FORMAT before a colon: the output's extension)
CONVERT_FORMATS = {"csv", "xlsx", "xls", "ods", "pdf", "txt", "html", "docx", "doc", "odt", "pptx", "odp"}
# options of a conversion that change nothing but how LibreOffice starts (the server sets its own)
CONVERT_FLAGS = {"--headless", "--norestore", "--nologo", "--nolockcheck", "--nodefault",
                 "--nofirststartwizard", "--invisible"}
# a filter's name (`csv:Text - txt - csv (StarCalc)`) and its options (`44,34,UTF8,1,,0,false`)
CONVERT_FILTER = re.compile(r"[A-Za-z0-9 ()._-]{1,80}")
CONVERT_OPTIONS = re.compile(r"[A-Za-z0-9,._-]{0,200}")


def vm_path(s, path):
    """Where a path of the VM's file system lives here: its own path when under this desktop's
    home or files folder, else the same name under the files folder (OSWorld's
    `/home/user/x.xlsx` is `files/x.xlsx`). The path, links resolved, must lie in one of the two."""
    if not path:
        raise BadRequest("`file_path` is missing")
    p = os.path.abspath(os.path.join(s.home, path))
    if not any(p.startswith(base + os.sep) for base in (s.home, s.files)):
        p = os.path.join(s.files, os.path.basename(p))
    return inside_session(s, p, path)


def vm_dir(s, path):
    """Where a folder of the VM's file system lives here: itself when it is this desktop's home
    or files folder or lies under one, else the files folder (OSWorld's `/home/user`)."""
    p = os.path.abspath(os.path.join(s.home, path))
    if not any(p == base or p.startswith(base + os.sep) for base in (s.home, s.files)):
        p = s.files
    return inside_session(s, p, path)


def inside_session(s, p, asked):
    """`p` with every link resolved, if that lies in the home or files folder; else refused."""
    real = os.path.realpath(p)
    for base in (s.home, s.files):
        b = os.path.realpath(base)
        if real == b or real.startswith(b + os.sep):
            return real
    raise Refused(f"{asked!r} resolves to {real}, outside this desktop's session folder")


def checked_conversion(s, argv):
    """The command that runs `libreoffice --convert-to FORMAT [--outdir DIR] FILE…` when any code
    is not allowed, or Refused: FORMAT's extension from CONVERT_FORMATS (a filter name and its
    options of plain characters may follow), every FILE an existing file and DIR an existing
    folder inside this desktop's session folder (links resolved, OSWorld's paths mapped as
    `vm_path` maps them), the output file no link; flags that only change how LibreOffice starts
    are dropped, and anything else is refused. The command runs the `soffice` on the PATH with a
    profile of its own."""
    fmt, outdir, files = None, None, []
    args = list(argv[1:])
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        name, eq, value = a.partition("=")
        if name in ("--convert-to", "--outdir") and a.startswith("--"):
            if not eq:
                if i >= len(args):
                    raise Refused(f"{name} needs a value")
                value = args[i]
                i += 1
            if name == "--convert-to":
                if fmt is not None:
                    raise Refused("--convert-to is given twice")
                fmt = value
            else:
                if outdir is not None:
                    raise Refused("--outdir is given twice")
                outdir = value
        elif a in CONVERT_FLAGS:
            continue
        elif a.startswith("-"):
            raise Refused(
                f"{a!r} is not passed to a conversion here: only --convert-to FORMAT, --outdir DIR, "
                "files and --headless (start the server with --allow-any-code to run any command)"
            )
        else:
            files.append(a)
    if fmt is None:
        raise Refused("a conversion needs --convert-to FORMAT")
    ext, _, rest = fmt.partition(":")
    filt, _, options = rest.partition(":")
    if ext.lower() not in CONVERT_FORMATS:
        raise Refused(
            f"--convert-to {ext!r}: files convert here only to {', '.join(sorted(CONVERT_FORMATS))}"
        )
    if (rest and not CONVERT_FILTER.fullmatch(filt)) or not CONVERT_OPTIONS.fullmatch(options):
        raise Refused(f"--convert-to {fmt!r}: the filter or its options hold characters not accepted here")
    if not files:
        raise Refused("a conversion needs a file to convert")
    out = vm_dir(s, outdir) if outdir is not None else inside_session(s, s.home, ".")
    if not os.path.isdir(out):
        raise Refused(f"--outdir {outdir!r}: no such folder")
    inputs = []
    for f in files:
        p = vm_path(s, f)
        if not os.path.isfile(p):
            raise Refused(f"{f!r}: no such file in this desktop's session folder")
        target = os.path.join(out, os.path.splitext(os.path.basename(p))[0] + "." + ext.lower())
        if os.path.islink(target):
            raise Refused(f"the output {target} is a link")
        inputs.append(p)
    return ["soffice", "--headless", "--norestore",
            f"-env:UserInstallation=file://{s.root}/convert-profile",
            "--convert-to", fmt, "--outdir", out] + inputs


def r_upload(h, s):
    form = h.form_body()
    path, data = form.get("file_path"), form.get("file_data")
    if path is None or data is None:
        raise BadRequest("the form needs `file_path` and `file_data`")
    dest = vm_path(s, path.decode())
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = dest + ".part"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, dest)
    s.uploaded.add(dest)
    h.reply(200, "File uploaded", "text/plain")


def r_file(h, s):
    form = h.form_body()
    path = form.get("file_path")
    if path is None:
        raise BadRequest("the form needs `file_path`")
    p = vm_path(s, path.decode())
    if not os.path.isfile(p):
        return h.reply(404, {"status": "error", "message": f"{path.decode()}: no such file"})
    with open(p, "rb") as f:
        h.reply(200, f.read(), "application/octet-stream")
