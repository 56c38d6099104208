_rdmactl() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="rdmactl"
                ;;
            rdmactl,check)
                cmd="rdmactl__subcmd__check"
                ;;
            rdmactl,counters)
                cmd="rdmactl__subcmd__counters"
                ;;
            rdmactl,devices)
                cmd="rdmactl__subcmd__devices"
                ;;
            rdmactl,doctor)
                cmd="rdmactl__subcmd__doctor"
                ;;
            rdmactl,explain)
                cmd="rdmactl__subcmd__explain"
                ;;
            rdmactl,exporter)
                cmd="rdmactl__subcmd__exporter"
                ;;
            rdmactl,fabric)
                cmd="rdmactl__subcmd__fabric"
                ;;
            rdmactl,generate)
                cmd="rdmactl__subcmd__generate"
                ;;
            rdmactl,gid)
                cmd="rdmactl__subcmd__gid"
                ;;
            rdmactl,gids)
                cmd="rdmactl__subcmd__gids"
                ;;
            rdmactl,link)
                cmd="rdmactl__subcmd__ports"
                ;;
            rdmactl,ls)
                cmd="rdmactl__subcmd__devices"
                ;;
            rdmactl,pingpong)
                cmd="rdmactl__subcmd__pingpong"
                ;;
            rdmactl,ports)
                cmd="rdmactl__subcmd__ports"
                ;;
            rdmactl,qos)
                cmd="rdmactl__subcmd__qos"
                ;;
            rdmactl,res)
                cmd="rdmactl__subcmd__res"
                ;;
            rdmactl,selftest)
                cmd="rdmactl__subcmd__selftest"
                ;;
            rdmactl,subnet)
                cmd="rdmactl__subcmd__subnet"
                ;;
            rdmactl,triage)
                cmd="rdmactl__subcmd__triage"
                ;;
            rdmactl,wait)
                cmd="rdmactl__subcmd__wait"
                ;;
            rdmactl__subcmd__gid,decode)
                cmd="rdmactl__subcmd__gid__subcmd__decode"
                ;;
            rdmactl__subcmd__gid,encode)
                cmd="rdmactl__subcmd__gid__subcmd__encode"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        rdmactl)
            opts="-j -h -V --json --color --sysfs --procfs --help --version devices ls ports link gids gid check pingpong selftest doctor wait counters fabric subnet qos exporter triage res explain generate"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__check)
            opts="-j -d -i -g -h -V --json --color --sysfs --procfs --ib-dev --ib-port --gid-index --peer --env --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-dev)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gid-index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -g)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__counters)
            opts="-j -d -i -a -h -V --json --color --sysfs --procfs --ib-dev --ib-port --all --interval --count --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-dev)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --count)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__devices)
            opts="-j -d -v -h -V --json --color --sysfs --procfs --ib-dev --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-dev)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__doctor)
            opts="-j -d -h -V --json --color --sysfs --procfs --ib-dev --expect --save-expect --format --state --no-state --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-dev)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --expect)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --save-expect)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "text nagios nhc junit" -- "${cur}"))
                    return 0
                    ;;
                --state)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__explain)
            opts="-j -h -V --json --color --sysfs --procfs --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__exporter)
            opts="-j -h -V --json --color --sysfs --procfs --listen --textfile --scrape-timeout --expect --collect --no-collect --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --textfile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scrape-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --expect)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --collect)
                    COMPREPLY=($(compgen -W "info gids pma hw qos findings" -- "${cur}"))
                    return 0
                    ;;
                --no-collect)
                    COMPREPLY=($(compgen -W "info gids pma hw qos findings" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__fabric)
            opts="-j -d -i -g -s -n -h -V --json --color --sysfs --procfs --ib-dev --ib-port --gid-index --gid-idx --rank --size --local-rank --rendezvous --rendezvous-dir --token --pattern --size-bytes --iters --deadline --timeout --join-timeout --latency-factor --bandwidth-fraction --resend-limit --expect-usec --expect-mbit --parallel --port-base --csv --svg --simulate --simulate-ranks --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-dev)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gid-idx)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gid-index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -g)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rank)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --local-rank)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rendezvous)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rendezvous-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pattern)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --size-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --iters)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --deadline)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --join-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --latency-factor)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bandwidth-fraction)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --resend-limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --expect-usec)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --expect-mbit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --parallel)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --port-base)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --csv)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --svg)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --simulate-ranks)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__generate)
            opts="-j -h -V --json --color --sysfs --procfs --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__gid)
            opts="-j -h -V --json --color --sysfs --procfs --help --version decode encode"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__gid__subcmd__decode)
            opts="-j -h -V --json --color --sysfs --procfs --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__gid__subcmd__encode)
            opts="-j -h -V --json --color --sysfs --procfs --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__gids)
            opts="-j -d -i -a -h -V --json --color --sysfs --procfs --ib-dev --ib-port --ip --all --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-dev)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__pingpong)
            opts="-j -d -i -g -p -s -n -e -l -m -a -h -V --json --color --sysfs --procfs --ib-dev --ib-port --gid-index --gid-idx --port --size --iters --duration --interval --lat --events --sl --tclass --pkey-index --mtu --op --timeout --bind --compat --cm --persist --all-sizes --report-gbits --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-dev)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gid-idx)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gid-index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -g)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --iters)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sl)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -l)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tclass)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pkey-index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mtu)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -m)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --op)
                    COMPREPLY=($(compgen -W "send write read all" -- "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bind)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --compat)
                    COMPREPLY=($(compgen -W "rc_pingpong" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__ports)
            opts="-j -d -i -v -h -V --json --color --sysfs --procfs --ib-dev --ib-port --verbose --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-dev)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__qos)
            opts="-j -d -i -h -V --json --color --sysfs --procfs --ib-dev --ib-port --tclass --interval --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-dev)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tclass)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__res)
            opts="-j -d -h -V --json --color --sysfs --procfs --ib-dev --pid --comm --interval --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-dev)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --pid)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --comm)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__selftest)
            opts="-j -d -i -g -s -h -V --json --color --sysfs --procfs --ib-dev --ib-port --gid-index --gid-idx --size --timeout --cm --steps --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-dev)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gid-idx)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gid-index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -g)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --steps)
                    COMPREPLY=($(compgen -W "basic unsignaled events solicited inline pkey flush threads shared-qp fetch-add srq" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__subnet)
            opts="-j -d -i -h -V --json --color --sysfs --procfs --ib-dev --ib-port --in-flight --timeout --retries --no-counters --interval --baseline --topology --svg --hosts --switches --reset-counters --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-dev)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ib-port)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --in-flight)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retries)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --baseline)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --topology)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --svg)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__triage)
            opts="-j -h -V --json --color --sysfs --procfs --no-host --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        rdmactl__subcmd__wait)
            opts="-j -h -V --json --color --sysfs --procfs --timeout --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --sysfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --procfs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _rdmactl -o nosort -o bashdefault -o default rdmactl
else
    complete -F _rdmactl -o bashdefault -o default rdmactl
fi

# Added by `rdmactl generate`: device names for -d/--ib-dev and for the DEV[/PORT]
# argument of ports and gids, read from sysfs when completing.
_rdmactl_devices() {
    local class="${1:-/sys}/class/infiniband" dev port
    for dev in "$class"/*; do
        [[ -e $dev ]] || continue
        printf '%s\n' "${dev##*/}"
        if [[ $2 == ports ]]; then
            for port in "$dev"/ports/*; do
                [[ -e $port ]] && printf '%s\n' "${dev##*/}/${port##*/}"
            done
        fi
    done
}

_rdmactl_with_devices() {
    local cur="$2" prev="$3" sub="" root="${RDMACTL_SYSFS:-/sys}" i=1
    while (( i < COMP_CWORD )); do
        case ${COMP_WORDS[i]} in
            --sysfs) root=${COMP_WORDS[i+1]}; (( i += 2 )); continue ;;
            --color) (( i += 2 )); continue ;;
            -*) ;;
            *) [[ -z $sub ]] && sub=${COMP_WORDS[i]} ;;
        esac
        (( i++ ))
    done
    case $prev in
        -d|--ib-dev)
            compopt +o default +o bashdefault 2>/dev/null
            COMPREPLY=( $(compgen -W "$(_rdmactl_devices "$root")" -- "$cur") )
            return 0
            ;;
    esac
    if [[ $sub =~ ^(ports|link|gids)$ && $cur != -* ]]; then
        case $prev in
            -i|--ib-port|--color|--sysfs) ;;
            *)
                compopt +o default +o bashdefault 2>/dev/null
                COMPREPLY=( $(compgen -W "$(_rdmactl_devices "$root" ports)" -- "$cur") )
                return 0
                ;;
        esac
    fi
    _rdmactl "$@"
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _rdmactl_with_devices -o nosort -o bashdefault -o default rdmactl
else
    complete -F _rdmactl_with_devices -o bashdefault -o default rdmactl
fi
