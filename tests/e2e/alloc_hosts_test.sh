#!/usr/bin/env bash
# The hosts source: --host, --hostfile (slots, max_slots, user@, ^exclusion, hostlist
# expressions), the default hostfile, and the localhost fallback.
. "$(dirname "$0")/common.sh"
D=$E2E/data
echo "PATH=/usr/bin" >"$T/empty.env"

run alloc --format json --env-file "$T/empty.env" --hostfile "$D/hostfile"
expect_eq "hostfile: exit 0" "$RC" 0
expect_golden "hostfile: json" alloc_hostfile.json

run alloc --format json --env-file "$T/empty.env" --host a,b:4,a
expect_eq "--host: exit 0" "$RC" 0
expect_eq "--host: names" "$(json "[n['name'] for n in j['nodes']]")" "['a', 'b']"
expect_eq "--host: a twice is 2 slots, b:4 is 4" "$(json "[n['slots'] for n in j['nodes']]")" "[2, 4]"
expect_eq "--host: total" "$(json "j['total_slots']")" 6
expect_eq "--host: not scheduler-owned" "$(json "j['scheduler_owned']")" False

# The default hostfile, named by BERTH_DEFAULT_HOSTFILE in the (file) environment.
printf 'PATH=/usr/bin\nBERTH_DEFAULT_HOSTFILE=%s\n' "$D/hostfile" >"$T/dflt.env"
run alloc --format json --env-file "$T/dflt.env"
expect_golden "default hostfile: json" alloc_hostfile.json

# Localhost fallback: this host, slots from its usable cores, not given.
run alloc --format json --env-file "$T/empty.env"
expect_eq "fallback: owner" "$(json "j['owner']")" hosts
expect_eq "fallback: one node" "$(json "len(j['nodes'])")" 1
expect_eq "fallback: name is the short host name" "$(json "j['nodes'][0]['name']")" "$(hostname -s)"
expect_eq "fallback: local" "$(json "j['nodes'][0]['local']")" True
expect_eq "fallback: slots not given" "$(json "j['nodes'][0]['slots_given']")" False
cores=$(hwloc-calc --number-of core "$(hwloc-bind --get)" 2>/dev/null || nproc)
expect_eq "fallback: slots = usable cores" "$(json "j['nodes'][0]['slots']")" "$cores"

# The text form is for people, but must say who owns what.
run alloc --env-file "$T/empty.env" --host a:2
expect_contains "text: owner line" "$OUT" "allocation: hosts, 1 node(s), 2 slot(s)"

# --simulate and --multiplier.
run alloc --format json --env-file "$T/empty.env" --simulate 3x4,2x8
expect_eq "simulate: owner" "$(json "j['owner']")" simulator
expect_eq "simulate: 5 nodes" "$(json "len(j['nodes'])")" 5
expect_eq "simulate: 28 slots" "$(json "j['total_slots']")" 28
run alloc --format json --env-file "$T/empty.env" --simulate 2x4 --multiplier 3
expect_eq "multiplier: 6 nodes" "$(json "len(j['nodes'])")" 6
expect_eq "multiplier: 24 slots" "$(json "j['total_slots']")" 24
expect_eq "multiplier: distinct names" "$(json "len(set(n['name'] for n in j['nodes']))")" 6
finish
