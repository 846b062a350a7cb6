#!/usr/bin/env python3
"""Summarizes a JFR recording of the notes service (see docs/reports/profile-http.md).

  jfr print --events jdk.SocketRead --stack-depth 40 rec.jfr > sock.txt
  jfr print --events jdk.ExecutionSample --stack-depth 40 rec.jfr > exec.txt
  python3 jfr-waits.py sock.txt exec.txt

Prints where request threads wait on PostgreSQL (socket reads under pgjdbc, by the statement that
caused them) and the top frames of the CPU samples.
"""
import collections
import re
import sys

STATEMENTS = [
    ('JdbcIdempotency$Statements.lookupAndClaim', 'Idem: lookup + claim (one round trip)'),
    ('JdbcIdempotency$Statements.lookup', 'Idem: lookup'),
    ('JdbcIdempotency$Statements.claim', 'Idem: claim'),
    ('JdbcIdempotency$Statements.complete', 'Idem: completion'),
    ('JdbcIdempotency.answerIfLive', 'Idem: lookup'),
    ('JdbcIdempotency.ensureSchema', 'Idem: schema check'),
    ('JdbcLeaseStore', 'Idem: lease store'),
    ('DataSourceTransactionManager.doCommit', 'COMMIT (Spring)'),
    ('DataSourceTransactionManager.doRollback', 'ROLLBACK (Spring)'),
    ('DataSourceTransactionManager.doBegin', 'BEGIN (Spring)'),
    ('NoteRepository', "the handler's own SQL"),
    ('HikariPool', 'connection pool'),
]


def events(path):
    event, in_stack = None, False
    for line in open(path, encoding='utf-8'):
        line = line.rstrip('\n')
        if line.startswith('jdk.') and line.endswith('{'):
            event, in_stack = {'stack': [], 'ms': 0.0}, False
        elif event is None:
            continue
        elif line.strip().startswith('duration ='):
            number, unit = line.split('=')[1].split()
            event['ms'] = float(number.replace(',', '')) * {'s': 1000, 'ms': 1, 'us': 1e-3, 'ns': 1e-6}.get(unit, 1)
        elif line.strip() == 'stackTrace = [':
            in_stack = True
        elif in_stack and line.strip() == ']':
            in_stack = False
        elif in_stack:
            event['stack'].append(re.sub(r'\(.*', '', line.strip()))
        elif line == '}':
            yield event
            event = None


def statement(stack):
    for frame in stack:
        for hint, name in STATEMENTS:
            if hint in frame:
                return name
    return 'other'


def main(sock, execs):
    waits, reads = collections.Counter(), collections.Counter()
    for e in events(sock):
        if any('org.postgresql' in f for f in e['stack']):
            name = statement(e['stack'])
            waits[name] += e['ms']
            reads[name] += 1
    total = sum(waits.values())
    print(f'database waits (socket reads under pgjdbc): {total:.0f} ms')
    for name, ms in waits.most_common():
        print(f'  {ms / total * 100:5.1f} %  {ms:9.0f} ms  {reads[name]:8d} reads  {name}')
    top, samples = collections.Counter(), 0
    for e in events(execs):
        samples += 1
        if e['stack']:
            top[e['stack'][0]] += 1
    print(f'top frames of {samples} CPU samples')
    for frame, n in top.most_common(10):
        print(f'  {n / samples * 100:5.1f} %  {frame}')


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
