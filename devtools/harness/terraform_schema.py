"""Offline stand-in for `terraform validate`: check a directory's `.tf` files against provider google 8.7.0.

Providers cannot be downloaded here, so `terraform init/validate` cannot run. The PyPI wheel
`cdktn-provider-google` 21.1.0 is generated from that provider's schema and carries it as a jsii assembly
(types, optional flags) plus the generated JavaScript, which holds the exact Terraform names cdktn emits:
`static tfResourceType = "google_cloud_run_v2_service"` per class and `gpu_zonal_redundancy_disabled:
...(struct.gpuZonalRedundancyDisabled)` per property. The wheel (sha256-pinned) and a compact index built
from it live in `<repo>/.cache/terraform-schema/`.

Checked: resource/data/ephemeral types exist; every argument and nested block (at any depth, `dynamic`
content included) exists and is written as an argument or a block as the schema says; required ones are
present; literal values have the schema's type (stricter than Terraform, which would convert "8" to a
number or 8 to a string); the `provider "google"` block; `required_providers` lightly. Not checked:
expressions, `.tf.json` files, resources served by another provider (`provider = google-beta`).

    python -m devtools.harness.terraform_schema DIR    # prints problems, exits 1 if there are any
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hcl2
from hcl2 import SerializationOptions
from lark.exceptions import LarkError

PROVIDER_VERSION = "8.7.0"
WHEEL_REQUIREMENT = "cdktn-provider-google==21.1.0"
WHEEL_NAME = "cdktn_provider_google-21.1.0-py3-none-any.whl"
WHEEL_SHA256 = "157dead5025d5db5abe48e40cc49f0b6a4d8088fd0498eb17ad5a36bca811b2a"
ASSEMBLY_MEMBER = "cdktn_provider_google/_jsii/provider-google@21.1.0.jsii.tgz"
INDEX_FORMAT = 1
CACHE_DIR = Path(__file__).resolve().parents[2] / ".cache" / "terraform-schema"

ATTRIBUTE_TYPES = ("string", "number", "bool", "list(string)", "list(number)", "map(string)")


class SchemaError(RuntimeError):
    """The wheel could not be fetched, verified or read as expected."""


@dataclass(frozen=True)
class Attribute:
    """An argument: one of ATTRIBUTE_TYPES."""

    type: str
    required: bool


@dataclass(frozen=True)
class Block:
    """A nested block; `single` when the provider allows at most one (cdktn types it as an object)."""

    body: int
    required: bool
    single: bool


Field = Attribute | Block


class Schema:
    """The index: Terraform type names -> body ids; bodies map argument/block names to fields."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.version: str = raw["provider_version"]
        self.kinds: dict[str, dict[str, int]] = {k: raw[k] for k in ("resource", "data", "ephemeral")}
        self.provider: int = raw["provider"]
        self._raw_bodies: list[dict[str, list[Any]]] = raw["bodies"]
        self._bodies: dict[int, dict[str, Field]] = {}
        self._paths: dict[int, list[tuple[str, ...]]] = {}

    def body(self, body_id: int) -> dict[str, Field]:
        if body_id not in self._bodies:
            self._bodies[body_id] = {
                name: Attribute(e[0], bool(e[1]))
                if isinstance(e[0], str)
                else Block(e[0], bool(e[1]), bool(e[2]))
                for name, e in self._raw_bodies[body_id].items()
            }
        return self._bodies[body_id]

    def paths(self, body_id: int) -> list[tuple[str, ...]]:
        """Every argument/block under a body, as name paths (for "it belongs in ..." hints)."""
        if body_id not in self._paths:
            out: list[tuple[str, ...]] = []
            for name, f in self.body(body_id).items():
                out.append((name,))
                if isinstance(f, Block):
                    out.extend((name, *p) for p in self.paths(f.body))
            self._paths[body_id] = out
        return self._paths[body_id]


# ---------------------------------------------------------------------------------------------------
# Fetching the wheel and building the index


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _pip_download(dest: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", WHEEL_REQUIREMENT, "--no-deps", "--only-binary=:all:",
         "--disable-pip-version-check", "--quiet", "-d", str(dest)],
        check=True,
    )  # fmt: skip
    return dest / WHEEL_NAME


def ensure_wheel(cache_dir: Path = CACHE_DIR, download: Callable[[Path], Path] = _pip_download) -> Path:
    """The verified wheel in `cache_dir`, downloaded first if absent or not the pinned file."""
    wheel = cache_dir / WHEEL_NAME
    if wheel.exists():
        if _sha256(wheel) == WHEEL_SHA256:
            return wheel
        wheel.unlink()  # a partial or foreign file: fetch it again
    cache_dir.mkdir(parents=True, exist_ok=True)
    print(
        f"terraform_schema: downloading {WHEEL_REQUIREMENT} (67 MB, once) into {cache_dir}", file=sys.stderr
    )
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix="download-") as tmp:
        try:
            got = download(Path(tmp))
        except (subprocess.CalledProcessError, OSError) as e:
            raise SchemaError(f"cannot download {WHEEL_REQUIREMENT}: {e}") from e
        digest = _sha256(got)
        if digest != WHEEL_SHA256:
            raise SchemaError(f"{got.name} has sha256 {digest}, expected {WHEEL_SHA256}; not using it")
        os.replace(got, wheel)
    return wheel


# The generated JavaScript, which is what cdktn runs to emit Terraform JSON: per struct a
# `function fooBarToTerraform(struct) { return { tf_name: ...(struct.camelName), ... } }`, per resource
# class its tfResourceType and `this._field = config.camelName` / `tf_name: ...(this._field)`.
_JS_STRUCT_FN = re.compile(r"^function (\w+)ToTerraform\(struct\) \{\n(.*?)^\}", re.M | re.S)
_JS_STRUCT_ENTRY = re.compile(r'^ {8}("[^"]+"|\w+): .*?\bstruct\.(\w+)\b', re.M)
_JS_CLASS = re.compile(
    r"^class \w+ extends cdktn\.Terraform(?:Resource|DataSource|EphemeralResource|Provider) \{\n(.*?)^\}",
    re.M | re.S,
)
_JS_RTTI = re.compile(r'static \[JSII_RTTI_SYMBOL_1\] = \{ fqn: "([^"]+)"')
_JS_TF_TYPE = re.compile(r'static tfResourceType = "([^"]+)";')
_JS_CTOR_ENTRY = re.compile(r"^ {8}this\._(\w+)(?:\.internalValue)? = config\.(\w+);", re.M)
_JS_SYNTH = re.compile(r"^    synthesizeAttributes\(\) \{\n(.*?)^    \}", re.M | re.S)
_JS_SYNTH_ENTRY = re.compile(r'^ {12}("[^"]+"|\w+): .*?\bthis\._(\w+)\b', re.M)
# The registry links in the docs name the same things; used as a cross-check.
_DOC_ANCHOR = re.compile(r"\{@link https://registry\.terraform\.io/\S+#(\S+) \w+#\S+\}")
_DOC_TYPE = re.compile(r"\{@link https://registry\.terraform\.io/\S+ (\S+)\}")
_CLASS_KINDS = {
    "cdktn.TerraformResource": "resource",
    "cdktn.TerraformDataSource": "data",
    "cdktn.TerraformEphemeralResource": "ephemeral",
    "cdktn.TerraformProvider": "provider",
}


@dataclass
class _Assembly:
    types: dict[str, Any] = field(default_factory=dict)
    # (module directory, struct function stem) -> {jsii property: Terraform name}
    struct_names: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    # class fqn -> (Terraform type, {config property: Terraform name})
    classes: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)


def _read_js(asm: _Assembly, module: str, src: str) -> None:
    for m in _JS_STRUCT_FN.finditer(src):
        asm.struct_names[(module, m.group(1))] = {
            p: k.strip('"') for k, p in _JS_STRUCT_ENTRY.findall(m.group(2))
        }
    for m in _JS_CLASS.finditer(src):
        body = m.group(1)
        rtti, tf_type, synth = _JS_RTTI.search(body), _JS_TF_TYPE.search(body), _JS_SYNTH.search(body)
        if not (rtti and tf_type and synth):
            raise SchemaError(f"lib/{module}: unexpected class layout")
        by_field = {f: p for f, p in _JS_CTOR_ENTRY.findall(body)}
        names = {
            by_field[f]: k.strip('"') for k, f in _JS_SYNTH_ENTRY.findall(synth.group(1)) if f in by_field
        }
        asm.classes[rtti.group(1)] = (tf_type.group(1), names)


def _read_assembly(wheel: Path) -> _Assembly:
    asm = _Assembly()
    with (
        zipfile.ZipFile(wheel) as zf,
        zf.open(ASSEMBLY_MEMBER) as tgz,
        tarfile.open(fileobj=tgz, mode="r|gz") as tar,
    ):
        for member in tar:
            f = tar.extractfile(member) if member.isfile() else None
            if f is None:
                continue
            if member.name == "package/.jsii":
                asm.types = json.load(f)["types"]
            elif member.name.startswith("package/lib/") and member.name.endswith(".js"):
                parts = member.name.split("/")
                if len(parts) > 3:  # package/lib/<module>/...js
                    _read_js(asm, parts[2], f.read().decode())
    if not asm.types or not asm.classes:
        raise SchemaError(f"{wheel.name}: no jsii assembly or no generated classes in {ASSEMBLY_MEMBER}")
    return asm


def _field_entry(ty: Mapping[str, Any], types: Mapping[str, Any]) -> tuple[str, str | None]:
    """('string'|..., None) for an argument, ('single'|'list', struct fqn) for a block."""
    union = [t for t in ty.get("union", {}).get("types", []) if t.get("fqn") != "cdktn.IResolvable"]
    if len(union) == 1:  # cdktn admits a token (IResolvable) beside bools and block lists
        ty = union[0]
    coll = ty.get("collection")
    if "primitive" in ty:
        prim = {"string": "string", "number": "number", "boolean": "bool"}.get(ty["primitive"])
        if prim:
            return prim, None
    elif coll:
        elem = coll["elementtype"]
        if "primitive" in elem:
            attr = f"{ {'array': 'list'}.get(coll['kind'], coll['kind']) }({elem['primitive']})"
            if attr in ATTRIBUTE_TYPES:
                return attr, None
        elif coll["kind"] == "array" and types.get(elem.get("fqn", ""), {}).get("datatype"):
            return "list", elem["fqn"]
    elif types.get(ty.get("fqn", ""), {}).get("datatype"):
        return "single", ty["fqn"]
    raise SchemaError(f"unexpected jsii type {json.dumps(ty)}")


def build_index(wheel: Path) -> dict[str, Any]:
    """Read the wheel's assembly into the compact index `Schema` loads."""
    asm = _read_assembly(wheel)
    types = asm.types
    bodies: list[dict[str, list[Any]]] = []
    ids: dict[str, int] = {}

    def body_id(fqn: str, names: Mapping[str, str]) -> int:
        if fqn in ids:
            return ids[fqn]
        ids[fqn] = len(bodies)
        body: dict[str, list[Any]] = {}
        bodies.append(body)
        for prop in types[fqn].get("properties", []):
            name = names.get(prop["name"])
            docs = prop.get("docs", {})
            anchors = _DOC_ANCHOR.findall(docs.get("summary", "") + " " + docs.get("remarks", ""))
            if name is None or (anchors and anchors[-1] != name):
                raise SchemaError(f"{fqn}.{prop['name']}: generated code names it {name}, docs {anchors}")
            required = 0 if prop.get("optional") else 1
            kind, child = _field_entry(prop["type"], types)
            if child is None:
                body[name] = [kind, required]
            else:
                child_t = types[child]
                module = child_t["locationInModule"]["filename"].split("/")[1]
                stem = child_t["name"][0].lower() + child_t["name"][1:]
                if (module, stem) not in asm.struct_names:
                    raise SchemaError(f"{child}: no {stem}ToTerraform in lib/{module}")
                body[name] = [
                    body_id(child, asm.struct_names[(module, stem)]),
                    required,
                    int(kind == "single"),
                ]
        return ids[fqn]

    index: dict[str, Any] = {"resource": {}, "data": {}, "ephemeral": {}}
    for fqn, (tf_type, names) in sorted(asm.classes.items()):
        cls = types[fqn]
        kind = _CLASS_KINDS.get(cls.get("base", ""))
        doc_type = _DOC_TYPE.search(cls.get("docs", {}).get("summary", ""))
        if kind is None or (kind != "provider" and not (doc_type and doc_type.group(1) == tf_type)):
            raise SchemaError(f"{fqn}: tfResourceType {tf_type}, base {cls.get('base')}, docs {doc_type}")
        config = cls["initializer"]["parameters"][-1]["type"]["fqn"]
        if kind == "provider":
            index["provider"] = body_id(config, names)
        else:
            index[kind][tf_type] = body_id(config, names)
    if "provider" not in index:
        raise SchemaError("no provider class in the assembly")
    header = {"format": INDEX_FORMAT, "provider_version": PROVIDER_VERSION, "wheel_sha256": WHEEL_SHA256}
    return header | index | {"bodies": bodies}


def load_schema(cache_dir: Path = CACHE_DIR, download: Callable[[Path], Path] = _pip_download) -> Schema:
    """The cached index, built (and the wheel fetched) first when missing or stale."""
    index = cache_dir / f"google-{PROVIDER_VERSION}.index.json"
    try:
        raw = json.loads(index.read_text())
        if raw.get("format") == INDEX_FORMAT and raw.get("wheel_sha256") == WHEEL_SHA256:
            return Schema(raw)
    except (OSError, ValueError):
        pass
    wheel = ensure_wheel(cache_dir, download)
    print(f"terraform_schema: indexing {wheel.name}", file=sys.stderr)
    raw = build_index(wheel)
    tmp = index.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(raw, separators=(",", ":")))
    os.replace(tmp, index)  # atomic: a concurrent reader sees the old index or the new one
    return Schema(raw)


@functools.cache
def default_schema() -> Schema:
    """The schema from the repository's cache, loaded once per process."""
    return load_schema()


# ---------------------------------------------------------------------------------------------------
# Checking configuration

# python-hcl2 keeps string quotes (unless told otherwise), which tells the literal "x" from an
# expression: expressions come back unquoted, most wrapped in ${...}.
_HCL_OPTIONS = SerializationOptions(strip_string_quotes=False, explicit_blocks=True, with_comments=False)
_WHOLE_INTERPOLATION = re.compile(r"\$\{.*\}", re.S)  # "${x}" alone has x's type, not string's
_RESOURCE_META = frozenset(
    {"count", "for_each", "depends_on", "provider", "lifecycle", "provisioner", "connection"}
)
_DATA_META = frozenset({"count", "for_each", "depends_on", "provider", "lifecycle"})
_META_BLOCKS = frozenset({"lifecycle", "provisioner", "connection"})
_CONDITIONS = frozenset({"precondition", "postcondition"})
_LIFECYCLE = {
    "resource": _CONDITIONS
    | {"create_before_destroy", "prevent_destroy", "ignore_changes", "replace_triggered_by"},
    "data": _CONDITIONS,
}
_DYNAMIC_KEYS = frozenset({"for_each", "iterator", "labels", "content"})
_KIND_LABEL = {
    "resource": "resource type",
    "data": "data source type",
    "ephemeral": "ephemeral resource type",
}


def _unquote(s: str) -> str:
    return s[1:-1] if len(s) >= 2 and s[0] == s[-1] == '"' else s


def _is_blocks(value: object) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, dict) and v.get("__is_block__") for v in value)
    )


def _is_labelled_blocks(value: object) -> bool:
    """`x "label" { ... }` blocks: python-hcl2 marks the bodies under each label, not the list items."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(
            isinstance(item, dict)
            and bool(item)
            and all(isinstance(b, dict) and b.get("__is_block__") for b in item.values())
            for item in value
        )
    )


def _labelled(value: object) -> Iterator[tuple[str, Any]]:
    """(label, body) for `x "label" { ... }` blocks as python-hcl2 returns them."""
    for item in value if isinstance(value, list) else []:
        for label, body in item.items():
            if label != "__is_block__":
                yield _unquote(label), body


def _literal_type(value: object) -> str | None:
    """The type of a literal ('string', 'number', 'bool', 'null', 'list', 'object'); None for expressions."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if value is None:
        return "null"
    if isinstance(value, str):
        quoted = len(value) >= 2 and value[0] == value[-1] == '"'
        return "string" if quoted and not _WHOLE_INTERPOLATION.fullmatch(value[1:-1]) else None
    if isinstance(value, list):
        return "list"
    return "object" if isinstance(value, dict) else None


def _describe(value: object) -> str:
    kind = _literal_type(value)
    if kind in ("list", "object"):
        return f"a{'n' if kind == 'object' else ''} {kind}"
    text = json.dumps(value) if kind != "string" else str(value)
    if len(text) > 40:
        text = text[:36] + '..."'
    return f"{kind} {text}"


def _version_admits(constraint: str, version: str) -> bool | None:
    """Whether a Terraform version constraint admits `version`; None when it cannot be read."""

    def parse(v: str) -> tuple[int, ...] | None:
        return tuple(int(p) for p in v.split(".")) if re.fullmatch(r"\d+(\.\d+)*", v) else None

    have = parse(version)
    assert have is not None
    for part in constraint.split(","):
        m = re.fullmatch(r"\s*(~>|>=|<=|!=|=|>|<)?\s*v?([\d.]+)\s*", part)
        want = parse(m.group(2)) if m else None
        if m is None or want is None:
            return None
        op = m.group(1) or "="
        full = want + (0,) * (len(have) - len(want))
        fixed = max(len(want) - 1, 1)  # ~> 8.7 admits 8.x from 8.7 on; ~> 8.7.0 admits 8.7.x
        ok = {
            "=": have == full, "!=": have != full, ">": have > full, ">=": have >= full, "<": have < full,
            "<=": have <= full,
            "~>": have >= full and have[:fixed] == want[:fixed],
        }[op]  # fmt: skip
        if not ok:
            return False
    return True


@dataclass
class _Checker:
    schema: Schema
    out: list[str] = field(default_factory=list)
    file: str = ""
    address: str = ""
    root: int = 0

    def report(self, path: Sequence[str], message: str) -> None:
        where = ".".join(path)
        self.out.append(f"{self.file}: {self.address}: {where + ': ' if where else ''}{message}")

    def hint(self, name: str, fields: Mapping[str, Field], path: Sequence[str]) -> str:
        here: list[str] = []
        for i, step in enumerate(path):  # the schema's path: no indices; `dynamic.x` + `content` is x
            if step.startswith("dynamic."):
                here.append(step.removeprefix("dynamic."))
            elif not (step == "content" and i and path[i - 1].startswith("dynamic.")):
                here.append(step.split("[")[0])
        elsewhere = [
            ".".join(p[:-1]) or "the top level" for p in self.schema.paths(self.root) if p[-1] == name
        ]
        elsewhere = [e for e in elsewhere if e != (".".join(here) or "the top level")]
        if elsewhere:
            return f" (it belongs in {', '.join(elsewhere[:3])}{', ...' if len(elsewhere) > 3 else ''})"
        close = difflib.get_close_matches(name, list(fields), n=1, cutoff=0.7)
        return f' (did you mean "{close[0]}"?)' if close else ""

    def unit(self, kind: str, tf_type: str, body: Mapping[str, Any], *, partial: bool) -> None:
        """One resource/data/ephemeral block, `self.address` set."""
        types = self.schema.kinds[kind]
        if tf_type not in types:
            close = difflib.get_close_matches(tf_type, list(types), n=1, cutoff=0.85)
            hint = f' (did you mean "{close[0]}"?)' if close else ""
            self.report(
                (), f'unknown {_KIND_LABEL[kind]} "{tf_type}" in provider google {self.schema.version}{hint}'
            )
            return
        self.root = types[tf_type]
        meta = _RESOURCE_META if kind == "resource" else _DATA_META
        self.body(self.schema.body(self.root), body, (), meta=meta, partial=partial)
        self.lifecycle(body.get("lifecycle"), _LIFECYCLE["resource" if kind == "resource" else "data"])
        if "count" in body and "for_each" in body:
            self.report((), '"count" and "for_each" cannot both be set')

    def lifecycle(self, value: object, allowed: frozenset[str]) -> None:
        for block in value if _is_blocks(value) and isinstance(value, list) else []:
            for key in block:
                if key != "__is_block__" and key not in allowed:
                    self.report(("lifecycle",), f'unknown argument "{key}"')

    def body(
        self,
        fields: Mapping[str, Field],
        body: Mapping[str, Any],
        path: tuple[str, ...],
        *,
        meta: frozenset[str] = frozenset(),
        partial: bool = False,
    ) -> None:
        present: set[str] = set()
        for key, value in body.items():
            if key == "__is_block__":
                continue
            if key == "dynamic" and _is_labelled_blocks(value):
                for label, dyn in _labelled(value):
                    present.add(label)
                    self.dynamic(fields, label, dyn, path)
                continue
            if key in meta:
                block = _is_labelled_blocks(value) if key == "provisioner" else _is_blocks(value)
                if block != (key in _META_BLOCKS):
                    what = "a block" if key in _META_BLOCKS else "an argument"
                    self.report(path, f'"{key}" must be written as {what}')
                continue
            f = fields.get(key)
            if f is not None and value is not None:
                present.add(key)  # even when misspelt as block/argument: one report is enough
            if f is None:
                what = "block" if _is_blocks(value) else "argument"
                self.report(path, f'unknown {what} "{key}"{self.hint(key, fields, path)}')
            elif isinstance(f, Attribute):
                if _is_blocks(value):
                    self.report(path, f'"{key}" is an argument, not a block: write {key} = ...')
                else:
                    self.value(f.type, value, path, f'argument "{key}"')
            elif not _is_blocks(value):
                self.report(path, f'"{key}" is a block, not an argument: write {key} {{ ... }}')
            else:
                if f.single and len(value) > 1:
                    self.report(path, f'at most one "{key}" block is allowed, found {len(value)}')
                for i, block in enumerate(value):
                    step = key if f.single else f"{key}[{i}]"
                    self.body(self.schema.body(f.body), block, (*path, step), partial=partial)
        if not partial:
            for name, f in fields.items():
                if f.required and name not in present:
                    what = "argument" if isinstance(f, Attribute) else "block"
                    self.report(path, f'missing required {what} "{name}"')

    def dynamic(
        self, fields: Mapping[str, Field], label: str, dyn: Mapping[str, Any], path: tuple[str, ...]
    ) -> None:
        """`dynamic "label" { for_each, iterator, labels, content { ... } }`: content is a `label` block."""
        here = (*path, f"dynamic.{label}")
        f = fields.get(label)
        if f is None:
            self.report(path, f'unknown block "{label}" in dynamic block{self.hint(label, fields, path)}')
        elif isinstance(f, Attribute):
            self.report(path, f'"{label}" is an argument, not a block: dynamic blocks only generate blocks')
        for key in dyn:
            if key != "__is_block__" and key not in _DYNAMIC_KEYS:
                self.report(here, f'unknown argument "{key}"')
        if "for_each" not in dyn:
            self.report(here, 'missing required argument "for_each"')
        content = dyn.get("content")
        if not _is_blocks(content) or not isinstance(content, list) or len(content) != 1:
            self.report(here, 'exactly one "content" block is required')
        elif isinstance(f, Block):
            self.body(self.schema.body(f.body), content[0], (*here, "content"))

    def value(self, expected: str, value: object, path: tuple[str, ...], what: str) -> None:
        got = _literal_type(value)
        if got is None or got == "null":
            return  # an expression: its type is Terraform's business
        if expected in ("string", "number", "bool"):
            if got != expected:
                self.report(path, f"{what}: expected {expected}, got {_describe(value)}")
            return
        outer, elem = expected[:-1].split("(")
        if outer == "list" and isinstance(value, list):
            for i, item in enumerate(value):
                self.value(elem, item, path, f"{what} item {i}")
        elif outer == "map" and isinstance(value, dict):
            for key, item in value.items():  # keys such as "nvidia.com/gpu" are data, not names
                self.value(elem, item, path, f'{what} key "{_unquote(key)}"')
        else:
            self.report(
                path,
                f"{what}: expected {'list' if outer == 'list' else 'map'} of {elem}, got {_describe(value)}",
            )

    def provider(self, name: str, body: Mapping[str, Any]) -> None:
        alias = _unquote(str(body.get("alias", "")))
        self.address = f"provider.{name}" + (f".{alias}" if alias else "")
        self.root = self.schema.provider
        fields = self.schema.body(self.schema.provider)
        self.body(fields, {k: v for k, v in body.items() if k != "version"}, ())

    def required_providers(self, entries: Mapping[str, Any]) -> None:
        self.address = "terraform.required_providers"
        entry = entries.get("google")
        spec: Mapping[str, Any] = entry if isinstance(entry, dict) else {"version": entry}
        source = spec.get("source")
        if isinstance(source, str) and _literal_type(source) == "string":
            src = _unquote(source).lower().removeprefix("registry.terraform.io/")
            if src != "hashicorp/google":
                self.report(
                    ("google",), f'source is "{_unquote(source)}", this checker knows hashicorp/google'
                )
        version = spec.get("version")
        if isinstance(version, str) and _literal_type(version) == "string":
            admits = _version_admits(_unquote(version), self.schema.version)
            if not admits:
                verdict = "cannot be read" if admits is None else f"does not admit {self.schema.version}"
                self.report(
                    ("google",), f'version constraint "{_unquote(version)}" {verdict}, the version checked'
                )


def _load_hcl(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as f:
        doc: dict[str, Any] = hcl2.load(f, serialization_options=_HCL_OPTIONS)
        return doc


def _is_override(path: Path) -> bool:
    return path.stem == "override" or path.stem.endswith("_override")


def _provider_name(body: Mapping[str, Any], tf_type: str) -> str:
    """The local provider name a resource uses: its `provider` argument, else its type's prefix."""
    ref = body.get("provider")
    if isinstance(ref, str):
        return ref.removeprefix("${").removesuffix("}").split(".")[0]
    return tf_type.split("_")[0]


def problems(tf_dir: Path, *, schema: Schema | None = None) -> list[str]:
    """Every problem in `tf_dir`'s `.tf` files against provider google 8.7.0; empty when they conform."""
    schema = schema or default_schema()
    # Terraform reads override files last, merging their partial blocks into the others.
    files = sorted(tf_dir.glob("*.tf"), key=lambda p: (_is_override(p), p.name))
    if not files:
        return [f"{tf_dir}: no .tf files"]
    check = _Checker(schema)
    seen: dict[str, str] = {}
    uses_google = declares_google = False
    for path in files:
        check.file = path.name
        try:
            doc = _load_hcl(path)
        except (LarkError, UnicodeDecodeError) as e:
            check.out.append(f"{path.name}: cannot parse: {str(e).splitlines()[0]}")
            continue
        partial = _is_override(path)  # its required arguments are in the block it overrides
        units: list[tuple[str, str, str, str, Any]] = []  # (prefix, kind, type, name, body)
        for kind in ("resource", "data", "ephemeral"):
            for tf_type, named in _labelled(doc.get(kind)):
                units += [("", kind, tf_type, name, body) for name, body in _labelled([named])]
        for check_name, check_body in _labelled(doc.get("check")):  # checks may scope data sources
            for tf_type, named in _labelled(check_body.get("data")):
                units += [(f"check.{check_name}.", "data", tf_type, n, b) for n, b in _labelled([named])]
        for prefix, kind, tf_type, name, body in units:
            if _provider_name(body, tf_type) != "google":
                continue  # another provider's schema (google-beta, random, ...): not ours to judge
            uses_google = True
            address = f"{prefix}{'' if kind == 'resource' else kind + '.'}{tf_type}.{name}"
            check.address = address
            if not partial:
                if address in seen:
                    check.report((), f"duplicate {kind} block (also in {seen[address]})")
                    continue
                seen[address] = path.name
            check.unit(kind, tf_type, body, partial=partial)
        for name, body in _labelled(doc.get("provider")):
            if name == "google":
                uses_google = True
                check.provider(name, body)
        for block in doc.get("terraform") or []:
            for entries in block.get("required_providers") or []:
                if "google" in entries:
                    declares_google = True
                    check.required_providers(entries)
    if uses_google and not declares_google:
        check.out.append(
            f"{tf_dir.name}: terraform.required_providers: no google entry; pin hashicorp/google"
            f" (this check is against {schema.version})"
        )
    return check.out


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: print the problems of one directory; 1 if any, 2 on bad usage."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m devtools.harness.terraform_schema DIR", file=sys.stderr)
        return 2
    found = problems(Path(args[0]))
    for line in found:
        print(line)
    if not found:
        print(f"{args[0]}: conforms to provider google {PROVIDER_VERSION}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
