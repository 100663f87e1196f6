"""Build ``tests/data/pulsar_admin_cli_verbs.json``: pulsar-admin's verbs as data (issue 31).

For each verb of pulsar-admin's groups that can concern one broker (tenants, namespaces, topics, topicPolicies,
schemas, clusters, brokers, broker-stats, resourcegroups): its name and aliases, its flags (long and short names,
required or not, from the picocli ``@Option`` annotations of ``pulsar-client-tools``' ``Cmd*.java``), its
positional parameters, the Java admin calls its ``run()`` makes, and the REST routes those calls send (from
``pulsar-client-admin``'s ``*Impl.java``: the ``WebTarget`` each builds and the ``async{Get,Put,Post,Delete}Request``
it sends it with), written as the method and path template of ``tests/data/pulsar_admin_v2_routes.json``.

Usage (a git directory holding apache/pulsar's history, e.g. a ``fetch``-ed snapshot)::

    python scripts/gen_admin_cli_verbs.py GIT_DIR [COMMIT]

It reads the Java sources as text; what it cannot resolve statically is the small table :data:`OVERRIDES`
(one reason each). Facts only are kept: names, flags, routes; no text of Pulsar's.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROUTES = ROOT / "tests" / "data" / "pulsar_admin_v2_routes.json"
OUT = ROOT / "tests" / "data" / "pulsar_admin_cli_verbs.json"
CLI = "pulsar-client-tools/src/main/java/org/apache/pulsar/admin/cli/"
IMPL = "pulsar-client-admin/src/main/java/org/apache/pulsar/client/admin/internal/"
GROUPS = {  # pulsar-admin group -> its Cmd class
    "tenants": "CmdTenants", "namespaces": "CmdNamespaces", "topics": "CmdTopics",
    "topicPolicies": "CmdTopicPolicies", "schemas": "CmdSchemas", "clusters": "CmdClusters",
    "brokers": "CmdBrokers", "broker-stats": "CmdBrokerStats", "resourcegroups": "CmdResourceGroups",
}
ACCESSORS = {  # how a Cmd reaches an admin interface -> its Impl
    "tenants": "TenantsImpl", "namespaces": "NamespacesImpl", "topics": "TopicsImpl", "getTopics": "TopicsImpl",
    "topicPolicies": "TopicPoliciesImpl", "getTopicPolicies": "TopicPoliciesImpl", "schemas": "SchemasImpl",
    "clusters": "ClustersImpl", "brokers": "BrokersImpl", "brokerStats": "BrokerStatsImpl",
    "resourcegroups": "ResourceGroupsImpl",
}
REQUESTS = {"asyncGetRequest": "GET", "asyncPutRequest": "PUT", "asyncPostRequest": "POST",
            "asyncDeleteRequest": "DELETE", "asyncPostRequestWithResponse": "POST",
            "asyncGetNamespaceParts": "GET"}
SYNC_VERBS = {"get": "GET", "put": "PUT", "post": "POST", "delete": "DELETE"}
OVERRIDES: dict[str, list[tuple[str, str]]] = {}
"""``Impl.method`` -> routes, where the source builds its path in a way this reader does not follow."""


def git_show(git_dir: str, commit: str, path: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def strip_comments(src: str) -> str:
    """Comments out, string literals kept (a ``//`` inside a string stays)."""
    return re.sub(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', lambda m: m.group(1) or "", src, flags=re.S)


def block(src: str, start: int) -> tuple[str, int]:
    """The text between the ``{`` at or after ``start`` and its matching ``}``, and the index after it."""
    i = src.index("{", start)
    depth = 0
    j = i
    while j < len(src):
        c = src[j]
        if c == '"':
            j += 1
            while src[j] != '"':
                j += 2 if src[j] == "\\" else 1
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return src[i + 1:j], j + 1
        j += 1
    raise ValueError("unbalanced braces")


def parens(src: str, i: int) -> str:
    """The text inside the parentheses opening at ``src[i] == '('``."""
    depth = 0
    j = i
    while j < len(src):
        c = src[j]
        if c == '"':
            j += 1
            while src[j] != '"':
                j += 2 if src[j] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return src[i + 1:j]
        j += 1
    raise ValueError("unbalanced parentheses")


def split_args(text: str) -> list[str]:
    out, depth, cur, in_str = [], 0, "", False
    for k, c in enumerate(text):
        if in_str:
            cur += c
            if c == '"' and text[k - 1] != "\\":
                in_str = False
            continue
        if c == '"':
            in_str = True
        elif c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


# ============================================================================ the Impl side: method -> routes
def methods(src: str) -> dict[str, list[str]]:
    """Method name -> the bodies of its overloads."""
    found: dict[str, list[str]] = {}
    for m in re.finditer(r"\n\s*(?:public|protected|private)\s+(?:static\s+)?(?:<[^>]*>\s*)?[\w<>\[\], ?.]+\s+"
                         r"(\w+)\s*\(", src):
        close = src.index(")", m.end()) if False else None
        try:
            args = parens(src, m.end() - 1)
        except ValueError:
            continue
        after = m.end() - 1 + len(args) + 2
        rest = src[after:after + 300]
        head = re.match(r"\s*(?:throws [\w., ]+)?\s*\{", rest)
        if not head:
            continue
        body, _ = block(src, after)
        found.setdefault(m.group(1), []).append(body)
    return found


class Impl:
    """One ``*Impl.java``: which routes each public method sends."""

    def __init__(self, name: str, src: str):
        self.name = name
        self.src = strip_comments(src)
        self.bases = {m.group(1): m.group(2).strip("/") for m in re.finditer(
            r"(\w+)\s*=\s*\w+\.path\(\"([^\"]+)\"\)", self.src)}
        self.methods = methods(self.src)

    def segments(self, expr: str, local: dict[str, list[str]]) -> list[str] | None:
        """A WebTarget expression as path segments (``*`` a parameter, ``**`` a ``tenant/namespace``)."""
        expr = expr.strip()
        expr = re.sub(r"\s+", "", expr)
        expr = expr[5:] if expr.startswith("this.") else expr
        m = re.match(r"(\w+)(\(|)", expr)
        if not m:
            return None
        head = m.group(1)
        rest = expr[m.end():]
        if m.group(2) == "(":
            args = split_args(parens(expr, m.end() - 1))
            rest = expr[m.end() - 1 + len(parens(expr, m.end() - 1)) + 2:]
            segs = self.helper(head, args, local)
        elif head in local:
            segs = list(local[head])
        elif head in self.bases:
            segs = self.bases[head].split("/")
        else:
            return None
        if segs is None:
            return None
        for call in re.finditer(r"\.(\w+)\(", rest):
            if call.group(1) != "path":
                continue
            arg = parens(rest, call.end() - 1)
            segs += self.part(arg)
        return segs

    def part(self, arg: str) -> list[str]:
        arg = arg.strip()
        if re.fullmatch(r'"[^"]*"', arg):
            return [s for s in arg.strip('"').split("/") if s]
        if re.fullmatch(r"(ns|namespace|namespaceName)(\.toString\(\))?", arg):
            return ["**"]
        if "getRestPath" in arg:
            return ["{domain}", "**", "*"] if "false" not in arg else ["**", "*"]
        return ["*"]

    def helper(self, name: str, args: list[str], local: dict[str, list[str]]) -> list[str] | None:
        if name in ("namespacePath",):
            if self.name == "TopicsImpl":  # namespacePath(domain, ns, parts...): a literal domain is kept
                domain = args[0].strip('"') if args[0] == '"non-persistent"' else "persistent"
                return ["admin", "v2", domain, "**"] + [p for a in args[2:] for p in self.part(a)]
            return self.bases["adminV2Namespaces"].split("/") + ["**"] + [p for a in args[1:] for p in self.part(a)]
        if name == "topicPath":
            if self.name == "SchemasImpl":
                return ["admin", "v2", "schemas", "**", "*"] + [p for a in args[1:] for p in self.part(a)]
            return ["admin", "v2", "persistent", "**", "*"] + [p for a in args[1:] for p in self.part(a)]
        if name in ("schemaPath", "versionPath", "schemasPath", "compatibilityPath", "metadata"):
            last = {"schemaPath": "schema", "versionPath": "version", "schemasPath": "schemas",
                    "compatibilityPath": "compatibility", "metadata": "metadata"}[name]
            return ["admin", "v2", "schemas", "**", "*", last]
        return None

    def routes(self, name: str, seen: frozenset = frozenset()) -> set[tuple[str, tuple[str, ...]]]:
        """(method, segments) of what ``name`` (any overload) sends, following calls to this class's methods."""
        if name in seen or name not in self.methods:
            return set()
        found: set[tuple[str, tuple[str, ...]]] = set()
        for body in self.methods[name]:
            local: dict[str, list[str]] = {}
            alternatives: dict[str, list[list[str]]] = {}
            for m in re.finditer(r"WebTarget\s+(\w+)\s*=\s*", body):
                end = body.index(";", m.end())
                expr = body[m.end():end]
                if "?" in expr and "==" in expr:  # cluster == null ? base : base.path(cluster): both are sent
                    for branch in expr.split("?", 1)[1].split(":", 1):
                        segs = self.segments(branch, local)
                        if segs is not None:
                            alternatives.setdefault(m.group(1), []).append(segs)
                    expr = expr.split("?", 1)[1].split(":", 1)[0]
                segs = self.segments(expr, local)
                if segs is not None:
                    local[m.group(1)] = segs
            for m in re.finditer(r"\b(\w+)\s*=\s*(\w+)\.path\(", body):  # path = path.path("x")
                if m.group(1) in local and m.group(2) in local and m.group(1) == m.group(2):
                    local[m.group(1)] = local[m.group(1)] + self.part(parens(body, m.end() - 1))
            for m in re.finditer(r"\b(" + "|".join(REQUESTS) + r")\s*\(", body):
                args = split_args(parens(body, m.end() - 1))
                if m.group(1) == "asyncGetNamespaceParts":
                    segs = self.bases["adminV2Namespaces"].split("/") + ["**"] + [
                        p for a in args[2:] for p in self.part(a)]
                else:
                    segs = self.segments(args[0], local) if args else None
                for alternative in alternatives.get(args[0].strip() if args else "", []):
                    found.add((REQUESTS[m.group(1)], tuple(alternative)))
                if segs is not None:
                    found.add((REQUESTS[m.group(1)], tuple(segs)))
            for m in re.finditer(r"\brequest(?:Async)?\(", body):
                target = parens(body, m.end() - 1)
                verb = re.match(r"\s*\)\s*\.\s*(?:async\(\)\s*\.\s*)?(get|put|post|delete)\(",
                                body[m.end() + len(target):])
                segs = self.segments(target, local)
                if verb and segs is not None:
                    found.add((SYNC_VERBS[verb.group(1)], tuple(segs)))
            for m in re.finditer(r"(?<![.\w])(\w+)\s*\(|this::(\w+)", body):
                callee = m.group(1) or m.group(2)
                if callee != name and callee in self.methods and callee not in REQUESTS:
                    found |= self.routes(callee, seen | {name})
        return found


# ============================================================================ the Cmd side: verbs and flags
def annotations(body: str, kind: str) -> list[str]:
    out = []
    for m in re.finditer(r"@" + kind + r"\s*\(", body):
        out.append(parens(body, m.end() - 1))
    return out


def option(text: str) -> dict:
    names = re.search(r"names\s*=\s*(\{[^}]*\}|\"[^\"]*\")", text)
    found = re.findall(r'"([^"]+)"', names.group(1)) if names else []
    return {"names": sorted(found, key=lambda n: (not n.startswith("--"), n)),
            "required": bool(re.search(r"required\s*=\s*true", text)),
            **({"hidden": True} if re.search(r"hidden\s*=\s*true", text) else {})}


def positional(text: str) -> str:
    d = re.search(r'description\s*=\s*"([^"]*)"', text)
    return d.group(1) if d else ""


def classes(src: str) -> dict[str, str]:
    out = {}
    for m in re.finditer(r"\bclass\s+(\w+)\s+extends\s+(\w+)", src):
        body, _ = block(src, m.end())
        out[m.group(1)] = body
    return out


def admin_calls(body: str, helpers: dict[str, str], depth: int = 0) -> list[tuple[str, str]]:
    calls = []
    for m in re.finditer(r"(?:getAdmin\(\)\s*\.\s*(\w+)\s*\(\s*\w*\s*\)|\b(getTopics|getTopicPolicies)\s*\(\s*\w*\s*\))"
                         r"\s*\.\s*(\w+)\s*\(", body):
        accessor = m.group(1) or m.group(2)
        if accessor in ACCESSORS:
            calls.append((ACCESSORS[accessor], m.group(3)))
    if depth < 2:
        for m in re.finditer(r"(?<![.\w])(\w+)\s*\(", body):
            if m.group(1) in helpers:
                calls += admin_calls(helpers[m.group(1)], helpers, depth + 1)
    return list(dict.fromkeys(calls))


def verbs(group: str, src: str, impls: dict[str, Impl], route_index) -> list[dict]:
    src = strip_comments(src)
    bodies = classes(src)
    outer = methods(src)
    helpers = {name: "\n".join(b) for name, b in outer.items() if name not in ("run",)}
    out = []
    for m in re.finditer(r'addCommand\(\s*"([^"]+)"\s*,\s*new\s+(?:\w+\.)?(\w+)\s*\([^)]*\)\s*((?:,\s*"[^"]+"\s*)*)\)', src):
        name, cls = m.group(1), m.group(2)
        aliases = re.findall(r'"([^"]+)"', m.group(3))
        body = bodies.get(cls, "")
        parent = re.search(r"\bclass\s+" + cls + r"\s+extends\s+(\w+)", src)
        if parent and parent.group(1) in bodies:  # options inherited from an abstract command of the file
            body = bodies[parent.group(1)] + "\n" + body
        flags = [option(o) for o in annotations(body, "Option")]
        flags = [f for f in flags if f["names"]]
        calls = admin_calls(body, helpers)
        routes = set()
        unresolved: list[str] = []
        outside: list[str] = []
        for impl, method in calls:
            sent = impls[impl].routes(method) if impl in impls else set()
            if f"{impl}.{method}" in OVERRIDES:
                sent = {(meth, tuple(p.strip("/").split("/"))) for meth, p in OVERRIDES[f"{impl}.{method}"]}
            matched = [route_index(meth, segs) for meth, segs in sent]
            routes.update(r for r in matched if r)
            if not sent:
                unresolved.append(f"{impl}.{method}")
            outside += ["{} /{}".format(meth, "/".join(segs)) for (meth, segs), r in zip(sent, matched) if not r]
        out.append({"group": group, "verb": name, **({"aliases": aliases} if aliases else {}), "class": cls,
                    "positional": [positional(p) for p in annotations(body, "Parameters")],
                    "flags": flags, "admin_calls": [f"{i[:-4]}.{mth}" for i, mth in calls],
                    "routes": [{"method": meth, "path": path} for meth, path in sorted(routes)],
                    **({"unresolved_calls": unresolved} if unresolved else {}),
                    **({"routes_not_in_table": sorted(set(outside))} if outside else {})})
    return out


def route_matcher(rows: list[dict]):
    """(method, segments) -> ``(method, template)`` of the table's row it names, or None."""
    table = [(r["method"], r["path"].strip("/").split("/"), r["path"]) for r in rows]

    def match(method: str, segs: tuple[str, ...]) -> tuple[str, str] | None:
        flat: list[str] = []
        for s in segs:
            flat += ["*", "*"] if s == "**" else ["*"] if s == "{domain}" else [s]
        if segs[:3] == ("admin", "v2", "{domain}"):
            flat[2] = "persistent"
        best = None
        for meth, parts, path in table:
            if parts[2] == "non-persistent" and flat[2] != "non-persistent":
                continue  # a topic path names a persistent topic unless the source says otherwise
            if meth != method or len(parts) != len(flat):
                continue
            score = 0
            for ours, theirs in zip(flat, parts):
                param = theirs.startswith("{")
                if ours == "*":
                    score += 0 if param else -1  # a variable may hold a literal (rare): a weaker match
                elif param or ours != theirs:
                    score = None
                    break
                else:
                    score += 1
            if score is not None and (best is None or score > best[0]):
                best = (score, (meth, path))
        return best[1] if best else None
    return match


def main(argv: list[str]) -> int:
    git_dir = argv[0]
    commit = argv[1] if len(argv) > 1 else subprocess.run(
        ["git", "--git-dir", git_dir, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    rows = json.loads(ROUTES.read_text())["routes"]
    applies = {(r["method"], r["path"]): r for r in rows}
    impls = {name: Impl(name, git_show(git_dir, commit, IMPL + name + ".java")) for name in set(ACCESSORS.values())}
    match = route_matcher(rows)
    table = []
    for group, cmd in GROUPS.items():
        table += verbs(group, git_show(git_dir, commit, CLI + cmd + ".java"), impls, match)
    for row in table:
        found = [applies[(r["method"], r["path"])] for r in row["routes"]]
        row["applies"] = bool(found) and all(r["applies"] for r in found) and "unresolved_calls" not in row
        if not row["applies"]:
            row["not_applicable"] = (
                "a call not resolved to a route" if "unresolved_calls" in row
                else "sends routes newer than pulsar_admin_v2_routes.json" if "routes_not_in_table" in row
                else "no admin REST v2 route (lookup, or local only)" if not found
                else sorted({r["not_applicable"] for r in found if not r["applies"]})[0])
    files = [CLI + cmd + ".java" for cmd in GROUPS.values()] + [IMPL + i + ".java" for i in sorted(impls)]
    header = {
        "what": "pulsar-admin's verbs as data: group, verb (and aliases), flags (long and short names, required or "
                "not), positional parameters, the Java admin calls its run() makes and the admin REST v2 routes "
                "they send (method and path template as in pulsar_admin_v2_routes.json), and whether the verb "
                "applies to a one-process broker (every route it sends does)",
        "repository": "https://github.com/apache/pulsar",
        "commit": commit,
        "read_from": "a snapshot of apache/pulsar's history (the fork ascentstream/pulsar, whose HEAD is an "
                     "apache/pulsar commit), read with git show by scripts/gen_admin_cli_verbs.py",
        "files": files,
        "generator": "scripts/gen_admin_cli_verbs.py GIT_DIR COMMIT",
    }
    OUT.write_text(json.dumps({"header": header, "verbs": table}, indent=1) + "\n")
    unresolved = [f"{r['group']} {r['verb']}: {r['unresolved_calls']}" for r in table if "unresolved_calls" in r]
    print(f"{len(table)} verbs, {sum(r['applies'] for r in table)} apply; unresolved: {len(unresolved)}",
          file=sys.stderr)
    for line in unresolved:
        print("  " + line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
