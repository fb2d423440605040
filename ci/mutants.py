#!/usr/bin/env python3
"""Mutation testing of the kernels: do the tests fail when a kernel is wrong?

For each source file given, picks a seeded sample of one-token mutants (a comparison, a boolean
operator, an off-by-one, fmaxf/fminf, an index sign) on lines that a coverage run executed, then
for each: applies it, rebuilds the build tree, runs the tests matching a regex (ctest, without the
slow and cuda labels, stopping at the first failure), records killed / survived / build_fail, and
restores the file. A survivor is either equivalent (the same behaviour: a bound that cannot be
reached, a padding size) or a test gap; docs/ci.md ("Mutation testing") lists the ones triaged.

Usage (from the repository root, after a host build and a coverage run):
  cmake -S . -B build/mut -DMF_CUDA=OFF -DCMAKE_BUILD_TYPE=Release && cmake --build build/mut -j2
  ci/mutants.py --coverage build/coverage/coverage.gated.info --build build/mut \\
      --tests nsa --per-file 30 --seed 1 optimized/nsa/*.cuh > mutants-nsa.jsonl

One JSON object per mutant on stdout (file, line, column, the token and its replacement, the
line, the result, the failing tests, seconds). Never leaves a mutant in place: the file is
restored after each run, also on an exception or Ctrl-C. Not part of the test suite (a run takes
about a minute per mutant of NSA's kernels, optimized/nsa/*.cuh, on 2 cores).
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import time

# (pattern, replacement): one token each; the lookarounds keep <<, <=, ->, ++, += and the like intact
OPERATORS = [
    (r'(?<![<>=!-])<(?![<=])', '<='), (r'<=', '<'), (r'(?<![<>=!-])>(?![>=])', '>='), (r'>=', '>'),
    (r'==', '!='), (r'!=', '=='), (r'&&', '||'), (r'\|\|', '&&'),
    (r'\+ 1\b', '+ 2'), (r' - 1\b', ''), (r'\bfmaxf\b', 'fminf'), (r'\bfminf\b', 'fmaxf'),
    (r'(?<![+\-*/=<>!&|])\+(?![+=])', '-'), (r'\* 2\b', '* 1'), (r'>> 1\b', '>> 2'),
]
SKIP_PREFIXES = ('#', '/*', '*', '//', 'static_assert', 'template', 'MF_CUDA_CHECK', 'assert')


def executed_lines(info, path):
    """Line numbers with a non-zero count for path in an lcov tracefile."""
    hits, cur = {}, None
    with open(info) as f:
        for ln in f:
            ln = ln.strip()
            if ln.startswith('SF:'):
                cur = ln[3:]
            elif ln.startswith('DA:') and cur is not None and cur.endswith('/' + path):
                line, count = ln[3:].split(',')[:2]
                hits[int(line)] = int(count)
    return {l for l, c in hits.items() if c > 0}


def plausible_comparison(code, at):
    """False for a '<' or '>' that most likely brackets template arguments or a launch."""
    if '<<<' in code or re.search(r'_cast<[^>]*$', code[:at]):
        return False
    if code[at] == '<':
        return not re.match(r'\w<\w|\w<(const |[A-Z]\w*[,>])', code[max(0, at - 1):at + 12])
    before, after = code[:at].rstrip(), code[at + 1:]
    return not (before.endswith(('*', '&')) or re.match(r'\w', before[-1:] or ' ') and after.startswith(('(', '::')))


def candidates(path, executed):
    out = []
    with open(path) as f:
        lines = f.read().split('\n')
    for i, text in enumerate(lines, 1):
        if i not in executed:
            continue
        code = text.split('//')[0]
        if not code.strip() or code.strip().startswith(SKIP_PREFIXES):
            continue
        for pat, rep in OPERATORS:
            for m in re.finditer(pat, code):
                if m.group(0) in '<>' and not plausible_comparison(code, m.start()):
                    continue  # a template argument list or a launch, most likely (a build_fail costs little)
                out.append({'file': path, 'line': i, 'column': m.start(), 'end': m.end(), 'token': m.group(0),
                            'replacement': rep, 'text': text.strip()})
    return out


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('files', nargs='+', help='sources to mutate, relative to the repository root')
    ap.add_argument('--coverage', required=True, help='lcov tracefile of a run of the suite (ci/coverage.sh)')
    ap.add_argument('--build', default='build/mut', help='build tree to rebuild and test (default build/mut)')
    ap.add_argument('--tests', required=True, help='ctest -R regex of the tests to run per mutant')
    ap.add_argument('--per-file', type=int, default=20, help='mutants per file, one per line (default 20)')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--jobs', default=str(os.cpu_count() or 2))
    ap.add_argument('--timeout', default='300', help='ctest --timeout per test, seconds (default 300)')
    ap.add_argument('--list', action='store_true', help='print the picked mutants and run nothing')
    a = ap.parse_args()

    rng = random.Random(a.seed)
    for path in a.files:
        cands = candidates(path, executed_lines(a.coverage, path))
        rng.shuffle(cands)
        picked, lines_used = [], set()
        for c in cands:
            if c['line'] not in lines_used and len(picked) < a.per_file:
                lines_used.add(c['line'])
                picked.append(c)
        if a.list:
            for m in picked:
                print(json.dumps(m))
            continue
        with open(path) as f:
            original = f.read()
        for m in picked:
            lines = original.split('\n')
            s = lines[m['line'] - 1]
            lines[m['line'] - 1] = s[:m['column']] + m['replacement'] + s[m['end']:]
            t0 = time.time()
            try:
                with open(path, 'w') as f:
                    f.write('\n'.join(lines))
                b = run(['cmake', '--build', a.build, '-j', a.jobs])
                if b.returncode != 0:
                    result, failed = 'build_fail', []
                else:
                    t = run(['ctest', '--test-dir', a.build, '-j', a.jobs, '-R', a.tests, '-LE', 'slow|cuda',
                             '--stop-on-failure', '--timeout', a.timeout])
                    result = 'killed' if t.returncode != 0 else 'survived'
                    failed = [l.split()[3] for l in t.stdout.split('\n') if '***' in l and len(l.split()) > 3]
            finally:
                with open(path, 'w') as f:
                    f.write(original)
            m = dict(m, result=result, failed=failed, seconds=round(time.time() - t0))
            del m['end']
            print(json.dumps(m), flush=True)
    if not a.list:
        run(['cmake', '--build', a.build, '-j', a.jobs])  # the unmutated build again
    return 0


if __name__ == '__main__':
    sys.exit(main())
