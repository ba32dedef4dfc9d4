#!/usr/bin/env bash
# Every resource manager's source, driven through --env-file, against golden JSON; and
# the same allocation as XML must be well-formed and agree with the JSON.
. "$(dirname "$0")/common.sh"
D=$E2E/data

# Files the env files point at live in data/; env files name them through @DATA@.
envfile() { sed "s|@DATA@|$D|g" "$D/$1" >"$T/$1"; echo "$T/$1"; }

for src in slurm slurm_cpus pbs lsf_hostfile lsf_mcpu gridengine flux; do
  extra=()
  [[ $src == slurm_cpus ]] && extra=(--slurm-slots cpus)
  run alloc --format json --env-file "$(envfile $src.env)" "${extra[@]}"
  expect_eq "$src: exit 0" "$RC" 0
  expect_golden "$src: json" "alloc_$src.json"
  json_out=$OUT
  run alloc --format xml --env-file "$(envfile $src.env)" "${extra[@]}"
  if printf '%s' "$OUT" | xmllint --noout - 2>"$T/xmlerr"; then ok "$src: xml well-formed"
  else fail "$src: xml not well-formed: $(cat "$T/xmlerr")"; fi
  names_xml=$(printf '%s' "$OUT" | xmllint --xpath '//node/@name' - | tr -s ' \n' '  ' |
    sed -e 's/name="\([^"]*\)"/ \1/g' -e 's/  */ /g' -e 's/ $//')
  OUT=$json_out
  names_json=$(json "''.join(' '+n['name'] for n in j['nodes'])")
  expect_eq "$src: xml and json name the same nodes" "$names_xml" "$names_json"
done

# --flux-r FILE works without any environment.
echo "PATH=/usr/bin" >"$T/empty.env"
run alloc --format json --env-file "$T/empty.env" --flux-r "$D/flux_R.json"
expect_eq "--flux-r: owner" "$(json "j['owner']")" flux
finish
