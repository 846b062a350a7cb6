#!/usr/bin/env python3
"""Top frames of a JFR recording's CPU samples, and the share of samples inside Idem's code.

    jfr print --events jdk.ExecutionSample --stack-depth 64 rec.jfr > exec.txt
    python3 jfr-top.py exec.txt [top]

Prints, as Markdown: the samples in all, the share whose stack holds a dev.idem frame (Idem's own
work and what it calls), the top frames by self samples, and the top dev.idem frames by self and
by total samples. Samples under the filter's call into the handler
(IdempotencyFilter$Run.run) are the application's own; the rest of those with an Idem frame are
Idem's work.
"""
import collections
import re
import sys

# The filter's callback into the handler: below it the samples are the application's, not Idem's.
HANDLER = 'dev.idem.servlet.IdempotencyFilter$Run.run'
FRAME = re.compile(r'^\s+([\w$.<>\[\]/]+)\(.*\)\s+line:')


def samples(path):
    stack = None
    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            if line.startswith('jdk.ExecutionSample'):
                if stack:
                    yield stack
                stack = []
            elif stack is not None:
                m = FRAME.match(line)
                if m:
                    stack.append(m.group(1))
    if stack:
        yield stack


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    self_counts = collections.Counter()
    idem_self = collections.Counter()
    idem_total = collections.Counter()
    own_self = collections.Counter()
    total = 0
    in_idem = 0
    own = 0
    for stack in samples(path):
        if not stack:
            continue
        total += 1
        self_counts[stack[0]] += 1
        idem_frames = [f for f in stack if f.startswith('dev.idem.') and '.notes.' not in f]
        if idem_frames:
            in_idem += 1
            if HANDLER not in stack:
                own += 1
                own_self[stack[0]] += 1
            for f in set(idem_frames):
                idem_total[f] += 1
        if stack[0].startswith('dev.idem.'):
            idem_self[stack[0]] += 1
    if total == 0:
        print('no samples')
        return
    pct = lambda n: f'{100.0 * n / total:.1f} %'
    print(f'samples: {total}; with an Idem frame on the stack (Idem and what it calls): {pct(in_idem)};'
          f' of them outside the handler (Idem itself, the runner transaction and its commit): {pct(own)}\n')
    print('| top frames (self) | share |\n|---|---:|')
    for f, n in self_counts.most_common(top):
        print(f'| `{f}` | {pct(n)} |')
    print('\n| frames (self) of the samples outside the handler | share |\n|---|---:|')
    for f, n in own_self.most_common(top):
        print(f'| `{f}` | {pct(n)} |')
    print('\n| Idem frames (total: on the stack) | share |\n|---|---:|')
    for f, n in idem_total.most_common(top):
        print(f'| `{f}` | {pct(n)} |')


if __name__ == '__main__':
    main()
