# bash completion for agent-chat(1)                        -*- shell-script -*-
#
# Installed by `make install` as
# $(PREFIX)/share/bash-completion/completions/agent-chat, where the
# bash-completion package loads it on first use; without that package,
# `source` this file from ~/.bashrc. It needs nothing but bash itself.
#
# Completes commands, the subcommands of `task`, `event`, `status`, `import` and `bridge`, the hook kinds,
# the options of every command, channel names (directories with a
# _meta.json under --root, else $AGENT_CHAT_ROOT, else the user config's
# root, else ~/agent-chat), task
# ids, lock ids and legacy markers of the channel on the line, agent names
# (the channel's members and cursor owners), the choices of --type,
# --status, --role, --resolve-publication and --primitives, and file names for
# --body-file, --script, --template, --history, --root and `run SCRIPT`,
# folder names for `import team|bus DIR`, and team names (the folders of
# ${CLAUDE_CONFIG_DIR:-~/.claude}/teams) and folder names for
# `import claude-team DIR|TEAM` and `bridge claude-team TEAM`.
#
# The option table below is static (no process is spawned on TAB);
# tests/functional/install_spec.lua compares it with `agent-chat CMD -h`
# for every command, so it cannot drift from the parsers.
#
# The tables are space-separated words without glob characters, expanded
# unquoted on purpose:
# shellcheck disable=SC2086

_agent_chat_commands="init channels roster post read wait peek claim ack receipts inbox request await respond team doctor lock check unlock recover recover-pending state compact task event status import export trim bridge run watch repl serve hook config fsck"
_agent_chat_task_commands="create list show update claim renew recover recover-pending done block release next"
_agent_chat_event_commands="post read"
_agent_chat_status_commands="set get watch"
_agent_chat_import_commands="team bus claude-team folder"
_agent_chat_bridge_commands="claude-team"
_agent_chat_hook_kinds="session-start prompt stop"
_agent_chat_primitives="messages cursors wait tasks dependencies leases path_locks state_summary"
_agent_chat_types="message broadcast shutdown_request shutdown_response plan_approval_request plan_approval_response"
_agent_chat_roles="parent child steer follow_up"

# _agent_chat_spec PATH: describe the command PATH ("post", "task claim",
# or "" for the options before the command). Sets
#   _agent_chat_valued  options that take a value
#   _agent_chat_flags   options that take none
#   _agent_chat_pos     what each positional argument is, in order; a
#                       trailing "+" repeats the last one: channel, task,
#                       marker, lock, path, file, dir, hook, none
# and returns 1 for an unknown PATH.
_agent_chat_spec()
{
    _agent_chat_flags="-h --help"
    _agent_chat_valued=""
    _agent_chat_pos=""
    local as="--as --from --owner" lease="--lease-seconds --lease --ttl"
    local state="--as --from --actor --template"
    local lists="--depends-on --files-hint --acceptance --branch"
    case $1 in
        "") _agent_chat_valued="--root --store"; _agent_chat_flags+=" --version" ;;
        init) _agent_chat_valued="--members --topic"; _agent_chat_pos="none" ;;
        channels) ;;
        roster) _agent_chat_pos="channel" ;;
        post)
            _agent_chat_valued="--from --to --title --reply --status --body --body-file --wait-for --timeout"
            _agent_chat_valued+=" --type --request-id --role"
            _agent_chat_pos="channel" ;;
        read)
            _agent_chat_valued="--as --kind --max-messages --max-bytes"; _agent_chat_flags+=" --all --peek"
            _agent_chat_pos="channel" ;;
        wait)
            _agent_chat_valued="--as --timeout --interval --kind --for --resume"; _agent_chat_flags+=" --json"
            _agent_chat_pos="channel" ;;
        peek) _agent_chat_valued="-n --kind"; _agent_chat_pos="channel" ;;
        claim) _agent_chat_valued="--as"; _agent_chat_pos="channel marker" ;;
        ack) _agent_chat_valued="--as"; _agent_chat_pos="channel none" ;;
        receipts) _agent_chat_flags+=" --json"; _agent_chat_pos="channel none" ;;
        inbox)
            _agent_chat_valued="--as --channels --kind --max-messages --max-bytes"
            _agent_chat_flags+=" --peek --json" ;;
        request)
            _agent_chat_valued="--from --to --type --title --body --body-file --request-id --role"
            _agent_chat_valued+=" --timeout --interval"; _agent_chat_flags+=" --no-wait --json"
            _agent_chat_pos="channel" ;;
        await)
            _agent_chat_valued="--as --request --timeout --interval"; _agent_chat_flags+=" --json"
            _agent_chat_pos="channel" ;;
        respond)
            _agent_chat_valued="--from --request --reason --title"; _agent_chat_flags+=" --approve --reject"
            _agent_chat_pos="channel" ;;
        team) _agent_chat_valued="--silent-after"; _agent_chat_flags+=" --json"; _agent_chat_pos="channel" ;;
        doctor) _agent_chat_valued="--stale-after"; _agent_chat_flags+=" --json"; _agent_chat_pos="channel" ;;
        lock) _agent_chat_valued="$as $lease"; _agent_chat_pos="channel path +" ;;
        check) _agent_chat_valued="$as"; _agent_chat_pos="channel path +" ;;
        unlock) _agent_chat_valued="$as --generation"; _agent_chat_pos="channel lock" ;;
        recover) _agent_chat_valued="$as --reason $lease"; _agent_chat_pos="channel lock" ;;
        recover-pending)
            _agent_chat_valued="$as --resolve-publication"; _agent_chat_pos="channel" ;;
        state)
            _agent_chat_valued="$state"
            _agent_chat_flags+=" --no-audit --json --strict --write --save"
            _agent_chat_pos="channel" ;;
        compact)
            _agent_chat_valued="$state"; _agent_chat_flags+=" --no-audit --json --strict"
            _agent_chat_pos="channel" ;;
        task | event | status | import | bridge) ;;
        "task create")
            _agent_chat_valued="--from --created-by --title --owner $lists --for-capability"
            _agent_chat_pos="channel none" ;;
        "task list") _agent_chat_flags+=" --json"; _agent_chat_pos="channel" ;;
        "task show") _agent_chat_pos="channel task" ;;
        "task update")
            _agent_chat_valued="--as --from --title --owner $lists --status"
            _agent_chat_flags+=" --clear-owner --clear-branch"
            _agent_chat_pos="channel task" ;;
        "task claim")
            _agent_chat_valued="--as --from $lease"; _agent_chat_pos="channel task" ;;
        "task renew")
            _agent_chat_valued="--as --from $lease --generation"; _agent_chat_pos="channel task" ;;
        "task recover")
            _agent_chat_valued="--as --from --reason $lease"; _agent_chat_pos="channel task" ;;
        "task recover-pending")
            _agent_chat_valued="--as --from --resolve-publication"; _agent_chat_pos="channel" ;;
        "task done" | "task release")
            _agent_chat_valued="--as --from --generation"; _agent_chat_pos="channel task" ;;
        "task block")
            _agent_chat_valued="--as --from"; _agent_chat_pos="channel task" ;;
        "task next")
            _agent_chat_valued="--as --from --capability $lease --wait"; _agent_chat_pos="channel" ;;
        "event post")
            _agent_chat_valued="--from --type --harness --status --detail --primitives"
            _agent_chat_pos="channel" ;;
        "event read") _agent_chat_valued="--type"; _agent_chat_pos="channel" ;;
        "status set") _agent_chat_valued="--as --ttl"; _agent_chat_pos="channel none none" ;;
        "status get") _agent_chat_valued="--agent"; _agent_chat_flags+=" --json"; _agent_chat_pos="channel none" ;;
        "status watch")
            _agent_chat_valued="--key --agent --timeout --count --interval"; _agent_chat_flags+=" --json"
            _agent_chat_pos="channel" ;;
        "import team" | "import bus")
            _agent_chat_valued="--into"; _agent_chat_flags+=" --dry-run --strict"
            _agent_chat_pos="dir" ;;
        "import claude-team")
            _agent_chat_valued="--into"; _agent_chat_flags+=" --dry-run --strict"
            _agent_chat_pos="team" ;;
        "bridge claude-team")
            _agent_chat_valued="--channel --as"; _agent_chat_flags+=" --once"
            _agent_chat_pos="team" ;;
        "import folder") _agent_chat_pos="dir none +" ;;
        export) _agent_chat_valued="--to"; _agent_chat_pos="channel +" ;;
        trim) _agent_chat_valued="--through --archive"; _agent_chat_flags+=" --dry-run"; _agent_chat_pos="channel" ;;
        run) _agent_chat_pos="file file +" ;;
        watch)
            _agent_chat_valued="--as --script --interval --retries --backoff --on-error --dead-letter --arg"
            _agent_chat_flags+=" --tasks --locks --once"
            _agent_chat_pos="channel" ;;
        repl) _agent_chat_valued="--history"; _agent_chat_flags+=" --no-history" ;;
        serve) _agent_chat_valued="--listen --channels --token --token-file --max-streams" ;;
        hook) _agent_chat_pos="hook" ;;
        config) _agent_chat_flags+=" --json" ;;
        fsck) _agent_chat_flags+=" --repair --json --verbose"; _agent_chat_pos="channel +" ;;
        *) return 1 ;;
    esac
    return 0
}

# _agent_chat_choices PATH OPTION: the fixed choices of an option, if any
# (the ones argparse shows as {a,b} are checked against -h by the tests).
_agent_chat_choices()
{
    case $1:$2 in
        "event post:--type" | "event read:--type") echo "capability status" ;;
        "event post:--status") echo "ready busy idle blocked stopped" ;;
        "task update:--status") echo "open in_progress blocked done cancelled" ;;
        "post:--type") echo "$_agent_chat_types" ;;
        "request:--type") echo "shutdown_request plan_approval_request" ;;
        post:--role | request:--role) echo "$_agent_chat_roles" ;;
        *:--resolve-publication) echo "rollback published" ;;
        "post:--wait-for") echo "read acked" ;;
        *:--kind) echo "message event audit" ;;
        "watch:--on-error") echo "stop skip dead-letter" ;;
    esac
}

# Add each word of $@ that starts with $cur to COMPREPLY.
_agent_chat_add()
{
    local w
    for w; do
        [[ $w == "$cur"* ]] && COMPREPLY+=("$w")
    done
}

# Like _agent_chat_add for a comma list: complete the item after the last
# comma of $cur, keeping what comes before it.
_agent_chat_add_list()
{
    local head="" w
    [[ $cur == *,* ]] && head=${cur%,*},
    for w; do
        [[ ,$head == *",$w,"* ]] && continue    # already in the list
        [[ $head$w == "$cur"* ]] && COMPREPLY+=("$head$w")
    done
    [[ ${#COMPREPLY[@]} -gt 0 ]] && compopt -o nospace 2>/dev/null
}

_agent_chat_files()
{
    mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -- "$cur")
    compopt -o filenames 2>/dev/null
}

# Print the base names of the files matching $1/$2, suffix $3 removed.
_agent_chat_names()
{
    local f
    for f in "$1"/$2; do
        [[ -e $f ]] || continue
        f=${f##*/}
        printf '%s\n' "${f%"$3"}"
    done
}

# Agent names known to the channel directory $1, each once: the members in
# its _meta.json and the owners of its read cursors (a cursor file named
# <name>.txt; the other names' files, <slug>.<hash>.txt, do not say whose
# they are).
_agent_chat_agents()
{
    local dir=$1 meta rest re='"([^"\\]*)"' name
    local -a found=()
    local -A seen=()
    if [[ -r $dir/_meta.json ]]; then
        meta=$(<"$dir/_meta.json")
        if [[ $meta == *'"members"'* ]]; then
            rest=${meta#*\"members\"}
            rest=${rest#*\[}
            rest=${rest%%\]*}
            while [[ $rest =~ $re ]]; do
                found+=("${BASH_REMATCH[1]}")
                rest=${rest#*"${BASH_REMATCH[0]}"}
            done
        fi
    fi
    while IFS= read -r name; do
        [[ $name == *.* ]] || found+=("$name")
    done < <(_agent_chat_names "$dir/.cursors" "*.txt" .txt)
    for name in "${found[@]}"; do
        [[ -z $name || -n ${seen[$name]:-} ]] && continue
        seen[$name]=1
        printf '%s\n' "$name"
    done
}

# Paths relative to the channel directory $1 (what lock and check take).
_agent_chat_channel_paths()
{
    local dir=$1 e IFS=$'\n' any=""
    [[ -d $dir ]] || return
    for e in $(cd -- "$dir" 2>/dev/null && compgen -f -- "$cur"); do
        [[ ${e##*/} == .* && ${cur##*/} != .* ]] && continue
        # The channel's own files are not workspace paths.
        case $e in
            _* | tasks | claims | locks | state.md | task-*.md | [0-9][0-9][0-9][0-9]*-*.md) continue ;;
        esac
        if [[ -d $dir/$e ]]; then
            e+=/
            any=1
        fi
        COMPREPLY+=("$e")
    done
    [[ -n $any ]] && compopt -o nospace 2>/dev/null
}

# The root when neither --root nor $AGENT_CHAT_ROOT gives one: the user
# config's root if that file exists (asked from `$1 config --json`, the
# program on the command line; one quick run), else ~/agent-chat.
_agent_chat_default_root()
{
    local dir=${XDG_CONFIG_HOME:-} json prog=$1
    [[ $dir == /* ]] || dir=$HOME/.config
    [[ $prog == "~"/* ]] && prog=$HOME/${prog#"~/"}
    if [[ -f $dir/agent-chat/config.yaml ]] && type -P "$prog" >/dev/null &&
        json=$("$prog" config --json 2>/dev/null) &&
        [[ $json == *'"settings"'*'"root": {'*'"value": "'* ]]; then
        json=${json#*'"settings"'}
        json=${json#*'"root": {'}
        json=${json#*'"value": "'}
        printf '%s\n' "${json%%\"*}"
        return
    fi
    printf '%s\n' "$HOME/agent-chat"
}

# The channels under $root, one a line.
_agent_chat_channel_names()
{
    local d
    for d in "$root"/*/_meta.json; do
        [[ -f $d ]] || continue
        d=${d%/_meta.json}
        printf '%s\n' "${d##*/}"
    done
}

# Complete a channel under $root.
_agent_chat_channels()
{
    local -a names
    mapfile -t names < <(_agent_chat_channel_names)
    _agent_chat_add "${names[@]}"
}

_agent_chat()
{
    COMPREPLY=()
    local cur=${COMP_WORDS[COMP_CWORD]} prev="" opt="" i w
    local root="" path="" chan="" npos=0 after_dashes="" raw=""
    local -a pos=() names=()

    # `--opt=value`: bash usually splits it into "--opt" "=" "value".
    if [[ $cur == "=" ]]; then
        opt=${COMP_WORDS[COMP_CWORD - 1]}
        cur=""
    elif ((COMP_CWORD >= 2)) && [[ ${COMP_WORDS[COMP_CWORD - 1]} == "=" ]]; then
        opt=${COMP_WORDS[COMP_CWORD - 2]}
    elif [[ $cur == --*=* ]]; then
        opt=${cur%%=*}
        cur=${cur#*=}
    elif ((COMP_CWORD >= 1)); then
        prev=${COMP_WORDS[COMP_CWORD - 1]}
    fi

    # Walk the words before the cursor: global options, the command path,
    # then the command's options (skipping their values) and positionals.
    _agent_chat_spec ""
    i=1
    while ((i < COMP_CWORD)); do
        w=${COMP_WORDS[i]}
        if [[ -z $after_dashes && $w == -?* ]]; then
            if [[ $w == -- ]]; then
                after_dashes=1
            elif [[ $w != *=* && " $_agent_chat_valued " == *" $w "* ]]; then
                if [[ ${COMP_WORDS[i + 1]} == "=" ]]; then
                    ((i++))
                fi
                [[ -z $path && $w == --root ]] && root=${COMP_WORDS[i + 1]}
                ((i++))
            elif [[ -z $path && $w == --root=* ]]; then
                root=${w#--root=}
            fi
        elif [[ $w == "=" ]]; then
            :
        elif [[ -z $path ]]; then
            path=$w
            [[ $path == run ]] && raw=1
            _agent_chat_spec "$path" || return 0
        elif [[ ($path == task || $path == event || $path == status || $path == import || $path == bridge) &&
                $npos -eq 0 ]]; then
            path="$path $w"
            _agent_chat_spec "$path" || return 0
        else
            pos+=("$w")
            ((npos++))
            # run passes everything after SCRIPT to the script untouched.
            [[ -n $raw ]] && after_dashes=1
        fi
        ((i++))
    done

    # The root (only for commands that take a channel, --into included) and
    # the channel named on the line, if any.
    local -a kinds
    read -ra kinds <<<"$_agent_chat_pos"
    if [[ ${kinds[0]} == channel || $path == "import "* || $path == "bridge "* ]]; then
        [[ -z $root ]] && root=${AGENT_CHAT_ROOT:-}
        [[ -z $root ]] && root=$(_agent_chat_default_root "${COMP_WORDS[0]}")
        [[ $root == "~"* ]] && root=$HOME${root#"~"}
        [[ -n ${pos[0]} && ${kinds[0]} == channel ]] && chan=$root/${pos[0]}
    fi

    # The value of an option.
    if [[ -z $opt && -n $prev && -z $after_dashes && $prev == -?* &&
        " $_agent_chat_valued " == *" $prev "* ]]; then
        opt=$prev
    fi
    if [[ -n $opt ]]; then
        local choices
        choices=$(_agent_chat_choices "$path" "$opt")
        if [[ -n $choices ]]; then
            _agent_chat_add $choices
            return 0
        fi
        # export --to and trim --archive are folders (post --to names agents, below)
        [[ ($path == export && $opt == --to) || $opt == --archive ]] && opt=--root
        case $opt in
            --root)
                mapfile -t COMPREPLY < <(compgen -d -- "$cur")
                compopt -o filenames 2>/dev/null ;;
            --body-file | --script | --history | --token-file) _agent_chat_files ;;
            --template)
                mapfile -t COMPREPLY < <(compgen -f -X '!*.lua' -- "$cur"; compgen -d -- "$cur")
                compopt -o filenames 2>/dev/null ;;
            --primitives) _agent_chat_add_list $_agent_chat_primitives ;;
            --into | --dead-letter | --channel) _agent_chat_channels ;;
            --channels)
                [[ -z $root ]] && root=${AGENT_CHAT_ROOT:-}
                [[ -z $root ]] && root=$(_agent_chat_default_root "${COMP_WORDS[0]}")
                [[ $root == "~"* ]] && root=$HOME${root#"~"}
                mapfile -t names < <(_agent_chat_channel_names)
                _agent_chat_add_list "${names[@]}" ;;
            --as | --from | --owner | --actor | --created-by)
                [[ -n $chan ]] && mapfile -t names < <(_agent_chat_agents "$chan")
                _agent_chat_add "${names[@]}" ;;
            --to)
                [[ -n $chan ]] && mapfile -t names < <(_agent_chat_agents "$chan")
                _agent_chat_add_list all "${names[@]}" ;;
            --depends-on)
                [[ -n $chan ]] && mapfile -t names < <(_agent_chat_names "$chan/tasks" "*.json" .json)
                _agent_chat_add_list "${names[@]}" ;;
        esac
        return 0
    fi

    if [[ -z $after_dashes && $cur == -* ]]; then
        _agent_chat_add $_agent_chat_valued $_agent_chat_flags
        return 0
    fi

    # A command, a subcommand or a positional argument.
    if [[ -z $path ]]; then
        _agent_chat_add $_agent_chat_commands
        return 0
    fi
    if [[ $path == task ]]; then
        _agent_chat_add $_agent_chat_task_commands
        return 0
    fi
    if [[ $path == event ]]; then
        _agent_chat_add $_agent_chat_event_commands
        return 0
    fi
    if [[ $path == status ]]; then
        _agent_chat_add $_agent_chat_status_commands
        return 0
    fi
    if [[ $path == import ]]; then
        _agent_chat_add $_agent_chat_import_commands
        return 0
    fi
    if [[ $path == bridge ]]; then
        _agent_chat_add $_agent_chat_bridge_commands
        return 0
    fi
    local kind=${kinds[npos]} n=${#kinds[@]}
    if [[ -z $kind || $kind == + ]] && ((n >= 2)) && [[ ${kinds[n - 1]} == + ]]; then
        kind=${kinds[n - 2]}
    fi
    case $kind in
        channel) _agent_chat_channels ;;
        task | lock | marker)
            if [[ -n $chan ]]; then
                case $kind in
                    task) mapfile -t names < <(_agent_chat_names "$chan/tasks" "*.json" .json) ;;
                    lock) mapfile -t names < <(_agent_chat_names "$chan/locks" "*.json" .json) ;;
                    marker) mapfile -t names < <(_agent_chat_names "$chan" "task-*.md" "") ;;
                esac
                _agent_chat_add "${names[@]}"
            fi ;;
        path) [[ -n $chan ]] && _agent_chat_channel_paths "$chan" ;;
        file) _agent_chat_files ;;
        dir)
            mapfile -t COMPREPLY < <(compgen -d -- "$cur")
            compopt -o filenames 2>/dev/null ;;
        team)
            local teams=${CLAUDE_CONFIG_DIR:-$HOME/.claude}/teams
            mapfile -t names < <(_agent_chat_names "$teams" "*" "")
            _agent_chat_add "${names[@]}"
            mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -d -- "$cur")
            compopt -o filenames 2>/dev/null ;;
        hook) _agent_chat_add $_agent_chat_hook_kinds ;;
    esac
    return 0
}

complete -F _agent_chat agent-chat
