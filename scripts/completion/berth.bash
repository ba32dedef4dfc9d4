# bash completion for berth(1). Installed as
# <prefix>/share/bash-completion/completions/berth; or source it from ~/.bashrc.
#
# Completes subcommands, each subcommand's options, the values of options that take
# one of a few words, and the verbs of `berth store`; files otherwise. The option
# lists are written out here: tests/e2e/manpage_test.sh checks them against
# `berth SUB --help`, so an option added to berth without being added here fails it.
# Needs nothing but bash (not the bash-completion package).

_berth_alloc_opts='--env-file -H --host --hostfile --default-hostfile --flux-r --simulate
  --multiplier --slurm-slots --keep-fqdn'
_berth_machine_opts='--machine --sysfs-root --affinity --launcher --slurm-version'

# _berth_options SUB [VERB]: the options of a subcommand (of a store verb).
_berth_options() {
  case $1 in
    alloc) echo "-h --help --format $_berth_alloc_opts" ;;
    machine) echo "-h --help --format $_berth_machine_opts $_berth_alloc_opts" ;;
    place)
      echo "-h --help -n --ntasks -c --cpus-per-task --nodes --cores --gpus --gpu-ids
        --memory-cap --format --run --auto --count $_berth_machine_opts $_berth_alloc_opts"
      ;;
    run)
      echo "-h --help --config --configfile --store --results --cache --worker --lease --store-patience --dry-run --commands --every-step --fail-fast -j --jobs
        --keep-going --keep-failed --no-step-output --agents --format $_berth_machine_opts $_berth_alloc_opts"
      ;;
    agent) echo "-h --help --node --node-from --machine" ;;
    report) echo "-h --help --html --store --format --run" ;;
    runs) echo "-h --help --store --format" ;;
    log) echo "-h --help -f --follow --store --cache" ;;
    status) echo "-h --help --cache --format" ;;
    methods) echo "-h --help --store --run" ;;
    store)
      case $2 in
        get) echo "-h --help --store --pipeline -o --out" ;;
        put | verify | cat) echo "-h --help --store --pipeline" ;;
        gc) echo "-h --help --store --keep-runs --pipeline --grace --dry-run" ;;
        *) echo "-h --help" ;;
      esac
      ;;
    launch)
      echo "-h --help -n --np --cpu-set --wdir --set-env --add-env --unset-env --prepend-env
        --append-env -x --bind-to --report-bindings --output --output-dir --stdin --timeout
        --grace --keep-going --oversubscribe --gpus-per-rank --mpi --host --exec-agent --sysfs-root --affinity"
      ;;
  esac
}

# The options an app after a ':' of `berth launch` may have.
_berth_launch_app_opts='-n --np --cpu-set --wdir --set-env --add-env --unset-env
  --prepend-env --append-env -x'

# _berth_arity SUB OPTION: how many words follow OPTION (0 for a flag).
_berth_arity() {
  case $1:$2 in
    report:--run | methods:--run) echo 1; return ;;
  esac
  case $2 in
    -h | --help | --keep-fqdn | --run | --auto | --dry-run | --fail-fast | --keep-going | --keep-failed | \
      --report-bindings | --oversubscribe | --worker | --no-step-output | --commands | --every-step)
      echo 0
      ;;
    --prepend-env | --append-env) echo 2 ;;
    *) echo 1 ;;
  esac
}

_berth_words() { mapfile -t COMPREPLY < <(compgen -W "$1" -- "$2"); }
_berth_files() {
  compopt -o filenames 2>/dev/null
  mapfile -t COMPREPLY < <(compgen -f -- "$1")
}
_berth_dirs() {
  compopt -o filenames 2>/dev/null
  mapfile -t COMPREPLY < <(compgen -d -- "$1")
}
# A command's first word: a command name, or a path when the word has a '/'.
_berth_command() {
  if [[ $1 == */* ]]; then
    _berth_files "$1"
  else
    mapfile -t COMPREPLY < <(compgen -c -- "$1" | sort -u)
  fi
}

# _berth_value SUB OPTION CUR: completes the value of OPTION.
_berth_value() {
  local sub=$1 opt=$2 cur=$3
  case $opt in
    --format)
      case $sub in
        alloc) _berth_words "text xml json" "$cur" ;;
        place) _berth_words "shell json" "$cur" ;;
        *) _berth_words "text json" "$cur" ;;
      esac
      ;;
    --launcher) _berth_words "auto srun pals local mpirun hydra" "$cur" ;;
    --agents) _berth_words "auto off all" "$cur" ;;
    --slurm-slots) _berth_words "tasks cpus" "$cur" ;;
    --gpus) _berth_words "none" "$cur" ;;
    --bind-to) _berth_words "core hwthread none" "$cur" ;;
    --output) _berth_words "plain tag tag-detailed timestamp xml" "$cur" ;;
    --stdin) _berth_words "0 all none" "$cur" ;;
    --mpi) _berth_words "auto pmix pmi1 pmi2 none" "$cur" ;;
    --sysfs-root | --wdir | --output-dir | --cache | --results) _berth_dirs "$cur" ;;
    --env-file | --hostfile | --default-hostfile | --flux-r | --html | -o | --out | --pipeline)
      _berth_files "$cur"
      ;;
    *) COMPREPLY=() ;; # a number, a list, a name or a URL: nothing to offer
  esac
}

_berth() {
  COMPREPLY=()
  local cur=${COMP_WORDS[COMP_CWORD]} cword=$COMP_CWORD
  local -a words=("${COMP_WORDS[@]}")
  local prev=""
  if ((cword >= 1)); then prev=${words[cword - 1]}; fi
  # `--opt=value`: bash makes the '=' a word of its own; eq_opt is the option whose
  # value is being completed after it.
  local eq_opt=""
  if [[ $cur == "=" ]]; then
    cur="" eq_opt=$prev
  elif [[ $prev == "=" ]] && ((cword >= 2)); then
    eq_opt=${words[cword - 2]}
  fi

  # The subcommand (and the store verb): the first words that are not options.
  local sub="" verb="" i=1
  while ((i < cword)); do
    case ${words[i]} in
      -*) ;;
      *)
        sub=${words[i]}
        break
        ;;
    esac
    ((i++))
  done
  if [[ -z $sub ]]; then
    if [[ $cur == -* ]]; then
      _berth_words "-h --help --version" "$cur"
    else
      _berth_words "alloc machine place run report runs log status methods store launch agent" "$cur"
    fi
    return 0
  fi
  local first=$((i + 1))
  if [[ $sub == store ]]; then
    local j
    for ((j = first; j < cword; j++)); do
      if [[ ${words[j]} != -* ]]; then
        verb=${words[j]}
        first=$((j + 1))
        break
      fi
    done
    if [[ -z $verb ]]; then
      if [[ $cur == -* ]]; then
        _berth_words "$(_berth_options store)" "$cur"
      else
        _berth_words "put get verify cat gc" "$cur"
      fi
      return 0
    fi
  fi

  # Walk the words after the subcommand: past a `--` (and, for launch, past an app's
  # command) they are the command's, not berth's.
  local opts
  opts=$(_berth_options "$sub" "$verb")
  local k=$first skip=0 in_command=0 command_start=0
  while ((k < cword)); do
    local w=${words[k]}
    if ((skip > 0)); then
      ((skip--))
    elif [[ $w == "=" ]]; then
      skip=1 # the value after --opt=
    elif ((in_command)); then
      if [[ $sub == launch && $w == ":" ]]; then
        in_command=0 opts=$_berth_launch_app_opts
      fi
    elif [[ $w == "--" ]]; then
      in_command=1 command_start=$((k + 1))
    elif [[ $w == -* ]]; then
      if [[ ${words[k + 1]} == "=" ]]; then
        skip=0
      else
        skip=$(_berth_arity "$sub" "$w")
      fi
    elif [[ $sub == launch || $sub == place ]]; then
      in_command=1 command_start=$k
      if [[ $w == ":" && $sub == launch ]]; then
        in_command=0 opts=$_berth_launch_app_opts
      fi
    fi
    ((k++))
  done

  if ((in_command)); then
    if ((cword == command_start)); then
      _berth_command "$cur"
    else
      _berth_files "$cur"
    fi
    return 0
  fi
  if [[ -n $eq_opt ]]; then
    _berth_value "$sub" "$eq_opt" "$cur"
    return 0
  fi
  if ((skip > 0)); then
    _berth_value "$sub" "$prev" "$cur"
    return 0
  fi
  if [[ $cur == -* ]]; then
    _berth_words "$opts" "$cur"
    return 0
  fi
  case $sub in
    launch | place) _berth_command "$cur" ;;
    store) [[ $verb == put || $verb == gc ]] && _berth_files "$cur" ;; # files; gc's pipeline
    *) _berth_files "$cur" ;; # a pipeline file
  esac
  return 0
}

complete -F _berth berth
