#!/usr/bin/env python3
"""The README's commands, checked against the code (`make readme-check`, part of `make test`).

  readme-check.py BINARY

1. Every `aasa-edge SUBCOMMAND … --flag` in a README command block names a subcommand that exists
   and flags its `--help` lists (a renamed flag would leave a recipe that fails when pasted).
2. Every `make TARGET` in the README is a target of the Makefile, and every console example of
   `aasa-edge validate|match|diff` on the repository's examples/ prints today what it shows.
3. The recipes run as written, pasted whole into bash from the checkout: recipes 1 to 3 with the
   clean-up block after them, then recipe 4 (each starts from nothing and stops what it started).
   What they print is checked for the outcome each recipe promises. They use ports 8080, 8081,
   8082, 8443 and 8444 on 127.0.0.1, /tmp/aasa-lab, /tmp/aasa-tiers and ./var.
"""
import glob
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
problems = []


def problem(text):
    problems.append(text)
    print("  ✗ " + text)


def blocks(markdown):
    """(heading, code) for each ```sh block, under the nearest heading."""
    heading, found = "", []
    lines = markdown.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.strip() == "```sh":
            j = i + 1
            while lines[j].strip() != "```":
                j += 1
            found.append((heading, "\n".join(lines[i + 1:j])))
            i = j
        i += 1
    return found


def commands(code):
    """Logical lines (backslash continuations joined), comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [re.sub(r"\s+#.*$", "", line).strip() for line in joined.split("\n") if line.strip() and not line.strip().startswith("#")]


def check_flags(binary, all_blocks):
    helps = {}

    def help_of(words):
        key = " ".join(words)
        if key not in helps:
            run = subprocess.run([binary, *words, "--help"], capture_output=True, text=True)
            helps[key] = run.stdout if run.returncode == 0 else None
        return helps[key]

    checked = 0
    for heading, code in all_blocks:
        for line in commands(code):
            for match in re.finditer(r"aasa-edge\s+([a-z][a-z-]*)((?:\s+[^|;&]*)?)", line):
                words, rest = [match.group(1)], (match.group(2) or "").split()
                text = help_of(words)
                # A command group (`store migrate`): its next word is the subcommand.
                if text and "SUBCOMMANDS:" in text and rest and re.fullmatch(r"[a-z][a-z-]*", rest[0]):
                    words.append(rest.pop(0))
                    text = help_of(words)
                if text is None:
                    problem(f"{heading}: `aasa-edge {' '.join(words)}` is not a subcommand")
                    continue
                for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", " ".join(rest)):
                    checked += 1
                    if flag not in text:
                        problem(f"{heading}: `aasa-edge {' '.join(words)} {flag}`: {flag} is not in its --help")
    if not problems:
        print(f"  {checked} flags of {len(helps)} commands in the README's command blocks, all in their --help")


def check_console_examples(binary, readme):
    """```console blocks showing `$ aasa-edge …` on the repository's example files: run now, the
    output must be the one shown (the engine's commands are deterministic)."""
    checked = 0
    for block in re.findall(r"```console\n(.*?)```", readme, re.S):
        lines = block.rstrip("\n").split("\n")
        if not lines[0].startswith("$ aasa-edge "):
            continue
        command, rest = lines[0][2:], lines[1:]
        while command.endswith("\\") and rest:
            command, rest = command[:-1] + " " + rest[0].strip(), rest[1:]
        words = shlex.split(command)
        if words[1] not in ("validate", "match", "diff") or not all(w.startswith("examples/") for w in words[2:] if w.endswith(".json")):
            continue
        run = subprocess.run([binary, *words[1:]], cwd=ROOT, capture_output=True, text=True)
        checked += 1
        if run.stdout.rstrip("\n").split("\n") != rest:
            problem(f"`{command}` now prints:\n{run.stdout}instead of what the README shows:\n" + "\n".join(rest))
    if checked == 0:
        problem("no `aasa-edge validate|match|diff` console example on examples/ was found to check")
    print(f"  {checked} console examples on examples/ run now and print what the README shows")


def check_make_targets(readme):
    makefile = open(os.path.join(ROOT, "Makefile"), encoding="utf-8").read()
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, re.M))
    used = set(re.findall(r"`make ([a-z][a-z-]*)", readme))
    for target in sorted(used - targets):
        problem(f"README names `make {target}`, which the Makefile does not have")
    print(f"  make targets named in the README: {', '.join(sorted(used))}: all in the Makefile")


def run_recipe(name, script, expectations, timeout, logs=()):
    print(f"  running {name} …", flush=True)
    try:
        run = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        problem(f"{name}: did not finish within {timeout} s")
        subprocess.run(["pkill", "-f", "scripts/lab-origin.sh"], check=False)
        print((expired.stdout or b"")[-2000:] if isinstance(expired.stdout, bytes) else (expired.stdout or "")[-2000:])
        return
    output = run.stdout + "\n" + run.stderr
    missing = [e for e in expectations if not re.search(e, output, re.M)]
    if missing:
        saved = os.path.join(os.environ.get("TMPDIR", "/tmp"), "readme-check-" + re.sub(r"\W+", "-", name) + ".log")
        with open(saved, "w", encoding="utf-8") as f:
            f.write(output)
        problem(f"{name}: the output lacks {missing} (all of it: {saved})")
        print(run.stdout[-3000:])
        # What the edges the recipe started said (a refused start-up shows only there).
        for pattern in logs:
            for log in sorted(glob.glob(pattern)):
                print(f"--- {log} (last lines)")
                print("".join(open(log, encoding="utf-8", errors="replace").readlines()[-15:]))
    else:
        print(f"  {name}: ran as written and printed what it promises")


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else ".build/debug/aasa-edge"
    run_recipes = "--no-recipes" not in sys.argv
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    all_blocks = blocks(readme)
    check_flags(binary, all_blocks)
    check_make_targets(readme)
    check_console_examples(binary, readme)

    def under(number):
        return [code for heading, code in all_blocks if heading.startswith(f"{number}. ")]
    first = [under(n)[0] for n in (1, 2, 3) if under(n)]
    cleanup = next((code for code in under(3) if "kill %1" in code), None)
    tiers = next((code for code in under(4) if "aasa-tiers" in code), None)
    if not run_recipes:
        print("  recipes not run (--no-recipes)")
    elif len(first) != 3 or cleanup is None or tiers is None:
        problem("the recipes were not found where expected (### 1. to ### 4., the clean-up block after recipe 3)")
    else:
        # Recipes 1-3 share one shell (their jobs and variables), then the clean-up block.
        script = "set -u\nrm -rf /tmp/aasa-lab var/aasa-edge.sqlite* var/admin-token\n" + "\n".join(first) + "\n" + cleanup
        run_recipe("recipes 1-3", script, [
            r"^HTTP/1.1 200", r"X-Cache: miss", r"^HTTP/1.1 403",                    # recipe 1
            r"CDN caught up after", r'"version":2,[^]]*"clients":\{"count":[1-9]', r'"version":2,.*"clientsBehind":\[[^]]*"client":"phone-3"',  # recipe 2
            r'"outcome":"updated"', r"AASA-Edge-Version: 3",                          # recipe 3
        ], timeout=240)
        run_recipe("recipe 4", "set -u\n" + tiers, [
            r"X-Cache: miss, miss", r"parent: .*CDN caught up after", r"child: .*CDN caught up after",
            r"Via: 1.1 parent \(aasa-edge/[^)]+\), 1.1 child",
        ], timeout=180, logs=["/tmp/aasa-tiers/*.log"])
    if problems:
        print(f"readme-check: {len(problems)} problem(s)")
        sys.exit(1)
    print("readme-check: passed")


if __name__ == "__main__":
    main()
