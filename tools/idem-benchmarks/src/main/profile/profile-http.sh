#!/usr/bin/env bash
# Profiles POST /notes creates in the notes service, one variant after the other, against a
# PostgreSQL server with pg_stat_statements loaded: the application's CPU samples (JFR), its CPU
# per request (/proc), and the database's statements with their execution time per create.
#
#   ./mvnw -B -q -DskipTests package -pl examples/notes-service -am
#   PGPORT=55432 tools/idem-benchmarks/src/main/profile/profile-http.sh /tmp/profile
#
# Needs: a PostgreSQL server on 127.0.0.1:$PGPORT (user postgres, trust) started with
# shared_preload_libraries=pg_stat_statements (and, for the CPU-bound regime, synchronous_commit=off),
# the extension created in the database "postgres"; wrk; a JDK with jcmd and jfr; python3.
# Variants: none (idem.enabled=false), transactional with idem.strategy=claim-first, and
# transactional with idem.strategy=key-last (the starter's default).
set -euo pipefail
cd "$(dirname "$0")/../../../../.."
OUT="${1:-/tmp/idem-profile}"
PGPORT="${PGPORT:-55432}"
CONNECTIONS="${CONNECTIONS:-4}"
SECONDS_LOAD="${SECONDS_LOAD:-20}"
JAR=examples/notes-service/target/notes-service.jar
HERE=tools/idem-benchmarks/src/main/profile
WRK=tools/idem-benchmarks/src/main/wrk
mkdir -p "$OUT"
psql_q() { psql -X -q -A -t -h 127.0.0.1 -p "$PGPORT" -U postgres "$@"; }

cpu_ticks() { # pid -> utime+stime in clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat"
}
db_ticks() { # sum of utime+stime of every postgres backend of the database
  local sum=0
  for p in $(pgrep -f "postgres: .* notes_profile" || true); do
    sum=$((sum + $(cpu_ticks "$p" 2>/dev/null || echo 0)))
  done
  echo "$sum"
}

run_variant() { # name, extra service arguments...
  local name="$1"; shift
  psql_q -d postgres -c "DROP DATABASE IF EXISTS notes_profile WITH (FORCE)" -c "CREATE DATABASE notes_profile"
  java -XX:+UseParallelGC -Xmx512m -jar "$JAR" --server.port=18080 --server.address=127.0.0.1 \
    --spring.datasource.url="jdbc:postgresql://127.0.0.1:$PGPORT/notes_profile?user=postgres" "$@" \
    > "$OUT/$name.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 120); do
    curl -s -o /dev/null http://127.0.0.1:18080/ && break
    sleep 0.5
  done
  local lua="$WRK/post-notes.lua"
  [ "$name" = none ] && lua="$HERE/post-notes-without-key.lua"
  wrk -t2 -c"$CONNECTIONS" -d10s -s "$lua" http://127.0.0.1:18080 > /dev/null          # warm-up
  psql_q -d postgres -c "SELECT pg_stat_statements_reset()" > /dev/null
  jcmd "$pid" JFR.start name=idem settings=profile filename="$OUT/$name.jfr" > /dev/null
  local a0 d0 a1 d1
  a0=$(cpu_ticks "$pid"); d0=$(db_ticks)
  wrk -t2 -c"$CONNECTIONS" -d"${SECONDS_LOAD}s" -s "$lua" http://127.0.0.1:18080 > "$OUT/$name.wrk"
  a1=$(cpu_ticks "$pid"); d1=$(db_ticks)
  jcmd "$pid" JFR.stop name=idem > /dev/null
  local requests
  requests=$(awk '/requests in/ {print $1}' "$OUT/$name.wrk")
  local hz; hz=$(getconf CLK_TCK)
  echo "$name requests=$requests app_us_per_req=$(( (a1 - a0) * 1000000 / hz / requests )) db_us_per_req=$(( (d1 - d0) * 1000000 / hz / requests ))" \
    | tee "$OUT/$name.cpu"
  psql_q -d postgres -F $'\t' -c "SELECT calls, round(total_exec_time::numeric, 1), round((total_exec_time / $requests * 1000)::numeric, 1),
      regexp_replace(left(query, 160), '\s+', ' ', 'g')
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'notes_profile')
    ORDER BY total_exec_time DESC LIMIT 12" > "$OUT/$name.statements.tsv"
  jfr print --events jdk.ExecutionSample --stack-depth 64 "$OUT/$name.jfr" > "$OUT/$name.exec.txt"
  python3 "$HERE/jfr-top.py" "$OUT/$name.exec.txt" 12 > "$OUT/$name.frames.md"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

run_variant none --idem.enabled=false
run_variant claim-first --idem.mode=transactional --idem.strategy=claim-first
run_variant key-last --idem.mode=transactional --idem.strategy=key-last
echo "results in $OUT"
