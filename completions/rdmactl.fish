# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_rdmactl_global_optspecs
    string join \n j/json color= sysfs= procfs= h/help V/version
end

function __fish_rdmactl_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_rdmactl_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_rdmactl_using_subcommand
    set -l cmd (__fish_rdmactl_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c rdmactl -n "__fish_rdmactl_needs_command" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_needs_command" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_needs_command" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_needs_command" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "devices" -d 'List RDMA devices (like ibv_devinfo; -v for every attribute)'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "ls" -d 'List RDMA devices (like ibv_devinfo; -v for every attribute)'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "ports" -d 'Show port state, rate, LID, the RDMA MTUs (active, max) and the netdev with its MTU'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "link" -d 'Show port state, rate, LID, the RDMA MTUs (active, max) and the netdev with its MTU'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "gids" -d 'Show GID tables with RoCE type, netdev and decoded IP address'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "gid" -d 'Convert between GIDs and IP addresses, offline'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "check" -d 'Is this GID index usable, and does it route to the peer?'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "pingpong" -d 'RC ping-pong between two hosts, interoperable with ibv_rc_pingpong'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "selftest" -d 'Loopback test inside one process, one line per verbs step'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "doctor" -d 'Check that this host\'s RDMA stack is sane; --expect FILE against a manifest of what it should have, --format nagios|nhc|junit for health-check frameworks'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "wait" -d 'Wait until ports are ACTIVE (boot ordering); on timeout exit 1 saying why each is not'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "counters" -d 'Port counters (counters/ and hw_counters/) grouped by what they indicate; --interval for wrap-aware deltas and rates'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "fabric" -d 'All-pairs RC test over many hosts, one process per endpoint started by srun, mpirun or pdsh: configuration drift, a latency/bandwidth matrix, and the endpoint or link to blame, explained'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "subnet" -d 'InfiniBand subnet discovery and diagnosis from this host (MADs): nodes, links, subnet manager, degraded links, error counters, changes since a baseline'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "qos" -d 'Is RoCE lossless as configured: each traffic class in use (--tclass, NCCL_IB_TC, UCX_IB_TRAFFIC_CLASS, rdma_cm\'s default) followed through DSCP → priority → PFC → ETS → ECN → CNP on each RoCE port; --interval for the pause, ECN and RNR counters of a run'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "exporter" -d 'Prometheus exporter: every port\'s state, configuration and counters, and doctor\'s findings as series; serves /metrics, or writes one file for node_exporter\'s textfile collector'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "triage" -d 'Read a failed job\'s log (NCCL, UCX, Open MPI, libfabric, NVSHMEM, Mooncake, perftest, ibv_rc_pingpong, rping, rdmactl, the kernel\'s): the root RDMA error apart from its cascade, its cause with the lines that show it, and the next commands with the job\'s own device and GID index'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "res" -d 'The RDMA resources of running processes (as `rdma res show`): each process\'s QPs (type, state, QPNs, PSNs), rdma_cm IDs, MRs with the memory they pin, CQs and PDs; dead connections, stalled QPs (--interval) and a named job that uses no RDMA'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "explain" -d 'Print what a diagnostic code means: when it fires, the cause, what it shows as evidence and the fix (the catalogue of docs/failures.md); with no code, list them all'
complete -c rdmactl -n "__fish_rdmactl_needs_command" -f -a "generate" -d 'Write man pages and shell completions (for packagers)'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand devices" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand devices" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand devices" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand devices" -s d -l ib-dev -d 'Only this device' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand devices" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand devices" -s v -l verbose -d 'Every attribute, as `ibv_devinfo -v` prints it'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand devices" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand devices" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ls" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ls" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ls" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ls" -s d -l ib-dev -d 'Only this device' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ls" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ls" -s v -l verbose -d 'Every attribute, as `ibv_devinfo -v` prints it'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ls" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ls" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ports" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ports" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ports" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ports" -s d -l ib-dev -d 'Only this device (same as the positional DEV)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ports" -s i -l ib-port -d 'Only this port' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ports" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ports" -s v -l verbose -d 'Also each port\'s P_Key table (the populated slots)'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ports" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand ports" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand link" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand link" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand link" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand link" -s d -l ib-dev -d 'Only this device (same as the positional DEV)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand link" -s i -l ib-port -d 'Only this port' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand link" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand link" -s v -l verbose -d 'Also each port\'s P_Key table (the populated slots)'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand link" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand link" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gids" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gids" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gids" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gids" -s d -l ib-dev -d 'Only this device (same as the positional DEV)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gids" -s i -l ib-port -d 'Only this port' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gids" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gids" -l ip -d 'Show the IP address each GID encodes'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gids" -s a -l all -d 'Include empty (all-zero) slots'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gids" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gids" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and not __fish_seen_subcommand_from decode encode" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and not __fish_seen_subcommand_from decode encode" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and not __fish_seen_subcommand_from decode encode" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and not __fish_seen_subcommand_from decode encode" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and not __fish_seen_subcommand_from decode encode" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and not __fish_seen_subcommand_from decode encode" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and not __fish_seen_subcommand_from decode encode" -f -a "decode" -d 'Decode GIDs: sysfs, IPv6, colon-byte or 32-hex-digit wire form'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and not __fish_seen_subcommand_from decode encode" -f -a "encode" -d 'The GID a RoCE v2 port gets for an IP address (ADDR or ADDR/LEN, as `ip addr` prints it)'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and __fish_seen_subcommand_from decode" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and __fish_seen_subcommand_from decode" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and __fish_seen_subcommand_from decode" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and __fish_seen_subcommand_from decode" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and __fish_seen_subcommand_from decode" -s h -l help -d 'Print help'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and __fish_seen_subcommand_from decode" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and __fish_seen_subcommand_from encode" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and __fish_seen_subcommand_from encode" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and __fish_seen_subcommand_from encode" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and __fish_seen_subcommand_from encode" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and __fish_seen_subcommand_from encode" -s h -l help -d 'Print help'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand gid; and __fish_seen_subcommand_from encode" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand check" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand check" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand check" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand check" -s d -l ib-dev -d 'Device (default: the first one)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand check" -s i -l ib-port -d 'Port of the device' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand check" -s g -l gid-index -d 'GID index to check, or auto (-1 means auto too, as NCCL_IB_GID_INDEX=-1)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand check" -l peer -d 'The peer\'s IP address or host name, to check routing and neighbours toward it' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand check" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand check" -l env -d 'Check, as the libraries read them, the NCCL and UCX variables that pick the device, port and GID: NCCL_IB_HCA, NCCL_IB_GID_INDEX, NCCL_IB_ROCE_VERSION_NUM, NCCL_IB_ADDR_FAMILY, NCCL_IB_ADDR_RANGE, NCCL_SOCKET_IFNAME, UCX_NET_DEVICES, UCX_IB_GID_INDEX'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand check" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -s d -l ib-dev -d 'Device (default: the first one)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -s i -l ib-port -d 'Port of the device' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -s g -l gid-idx -l gid-index -d 'GID index, or auto (-1 means auto too)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -s p -l port -d 'TCP port of the out-of-band exchange' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -s s -l size -d 'Message size in bytes [default: 4096; a server without -s takes the client\'s]' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -s n -l iters -d 'Number of iterations [default: 1000; a server without -n, --duration or --lat takes the client\'s]' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -l duration -d 'Run each measured operation for SECS instead of -n iterations (soak runs; memory stays constant)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -l interval -d 'A progress line (iterations, rate, latency) on stderr every SECS [default: 5 when stderr is a terminal, none otherwise]' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -s l -l sl -d 'Service level of the path (0-15; on RoCE the driver maps it to a priority)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -l tclass -d 'Traffic class of the GRH: on RoCE v2 the IP DSCP (upper 6 bits) and ECN (lower 2). Decimal (96) or hex (0x60), as perftest takes it, or a DSCP name of iproute2\'s rt_dsfield (CS3, AF41, EF)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -l pkey-index -d 'P_Key index of the QP, into the port\'s P_Key table [default: 0]' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -s m -l mtu -d 'Path MTU (256, 512, 1024, 2048, 4096); default: the smaller active MTU of the two ports (a server without -m takes the client\'s)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -l op -d 'Operations to run [default: all; send against a stock ibv_rc_pingpong; a server without --op takes the client\'s]. A SEND\'s latency is a round trip (ibv_rc_pingpong\'s ping-pong): twice ib_send_lat\'s one-way figure' -r -f -a "send\t''
write\t''
read\t''
all\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -l timeout -d 'Give up on any step after this many seconds' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -l bind -d 'Local address: a server listens on it only; with --cm a client connects from it' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -l compat -d 'Speak another tool\'s exchange (client side; a server detects it by itself)' -r -f -a "rc_pingpong\t'The exchange of rdma-core\'s ibv_rc_pingpong'"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -l lat -d 'RDMA WRITE and READ one at a time, for their latency, each timed from post to completion (as ib_read_lat; a WRITE\'s completion waits for the ACK, a round trip, where ib_write_lat reports half of a WRITE ping-pong); without it they keep a window in flight and report bandwidth'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -s e -l events -d 'Sleep on the completion channel instead of busy-polling (ibv_rc_pingpong -e)'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -l cm -d 'Connect through the RDMA connection manager (librdmacm) instead of a TCP exchange'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -l persist -d 'Server: serve one client after another until Ctrl-C (one report per client)'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -s a -l all-sizes -d 'Every message size from 2 B to 8 MiB, doubling, one run each, and one table (perftest\'s -a); give it to both ends. -n applies to each size'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -l report-gbits -d 'Bandwidth in Gbit/s instead of Mbit/s in the text report (perftest\'s --report-gbits; -j always carries mbit_per_sec)'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand pingpong" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand selftest" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand selftest" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand selftest" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand selftest" -s d -l ib-dev -d 'Device; give two to test between them' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand selftest" -s i -l ib-port -d 'Port of the device(s)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand selftest" -s g -l gid-idx -l gid-index -d 'GID index, or auto (-1 means auto too)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand selftest" -s s -l size -d 'Message size in bytes' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand selftest" -l timeout -d 'Give up on any step after this many seconds' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand selftest" -l steps -d 'Run only these steps, comma-separated (default: all); the setup steps (open to rts) always run' -r -f -a "basic\t'post recv, send, rdma write, rdma read, atomic cas, zero-byte send, poll'
unsignaled\t'Only every k-th send signalled; the send queue never overflows'
events\t'Completion events through a channel instead of busy polling'
solicited\t'A CQ armed solicited-only: an event for a solicited SEND only'
inline\t'A SEND at max_inline_data inline; one byte more is refused'
pkey\t'The P_Key table; the default P_Key\'s index; an index past the table refused'
flush\t'Outstanding work requests flushed by the move to ERR'
threads\t'Threads on their own QPs sharing one PD and CQ'
shared-qp\t'Threads posting on one shared QP'
fetch-add\t'Fetch-and-add beside compare-and-swap'
srq\t'A shared receive queue serving two QPs'"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand selftest" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand selftest" -l cm -d 'Connect through the RDMA connection manager'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand selftest" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand selftest" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand doctor" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand doctor" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand doctor" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand doctor" -s d -l ib-dev -d 'Only this device' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand doctor" -l expect -d 'Also judge the host against FILE, a manifest (TOML, or JSON by extension or content) of the devices, ports, rates, MTUs, firmware, GIDs, memlock and modules it should have (docs/health-checks.md)' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand doctor" -l save-expect -d 'Write this host as a manifest for --expect to FILE (JSON when it ends in .json, else TOML), then report as usual' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand doctor" -l format -d 'How to report: text, or for health-check frameworks nagios (a status line with perfdata; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN), nhc (nothing when healthy, else one line "rdmactl: CODE SUBJECT" and exit 1) or junit (XML, one testcase per check)' -r -f -a "text\t'The findings for a person (or -j for JSON)'
nagios\t'Nagios/Icinga plugin output'
nhc\t'LBNL NHC and Slurm drain reasons'
junit\t'JUnit XML for CI'"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand doctor" -l state -d 'Keep the port counters in FILE between runs and warn only on an error counter that grew since the previous run (the first run records a baseline). Default with --format nagios|nhc|junit on a live host: /var/lib/rdmactl/doctor-FORMAT.json; without state, non-zero totals are information, not a warning' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand doctor" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand doctor" -l no-state -d 'Keep no counter state, even with a health-check format: totals are information only'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand doctor" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand doctor" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand wait" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand wait" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand wait" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand wait" -l timeout -d 'Give up after SECS seconds (fractions allowed; 0 checks once)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand wait" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand wait" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand wait" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand counters" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand counters" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand counters" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand counters" -s d -l ib-dev -d 'Only this device (same as the positional DEV)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand counters" -s i -l ib-port -d 'Only this port' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand counters" -l interval -d 'Re-read every SECS seconds (fractions allowed) and print each interval\'s deltas and rates; with -j one JSON object per sample, one per line' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand counters" -l count -d 'With --interval: stop after N samples (default: until interrupted)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand counters" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand counters" -s a -l all -d 'Every counter, zero and undescribed ones included (default: the non-zero counters that matter for diagnosis)'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand counters" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand counters" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -s d -l ib-dev -d 'Device of this endpoint; give several (one per local rank: the n-th process on a host takes the n-th), as DEV/PORT, or DEV on -i\'s port. Default: the n-th ACTIVE port of the host' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -s i -l ib-port -d 'Port of the device(s)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -s g -l gid-idx -l gid-index -d 'GID index, or auto (-1 means auto too)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l rank -d 'This process\'s rank (default: from SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMIX_RANK or PMI_RANK; pdsh: --rank %n)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l size -d 'Number of ranks (default: from the launcher)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l local-rank -d 'The n-th process on this host (default: SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK, ...; else 0)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l rendezvous -d 'Where rank 0 listens and the others connect (default: MASTER_ADDR:MASTER_PORT, else the first host of SLURM_JOB_NODELIST on port 18514)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l rendezvous-dir -d 'A directory every rank can read (a cluster file system): rank 0 writes its address there, on a port of its choosing' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l token -d 'Run token: only ranks with the same token join (default: derived from the launcher\'s job id)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l pattern -d 'Pairs to test: all, rails (same local rank only) or random:K (K partners each)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -s s -l size-bytes -d 'Message size of each pair test' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -s n -l iters -d 'Iterations of each operation in a pair test' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l deadline -d 'A pair test that has not finished after this many seconds is stopped and failed' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l timeout -d 'Give up on any step of a pair test after this many seconds (pingpong\'s --timeout)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l join-timeout -d 'Rank 0 waits this long for every rank to join' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l latency-factor -d 'A pair is slow above this many times the baseline latency' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l bandwidth-fraction -d 'A pair\'s bandwidth is low below this fraction of the baseline' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l resend-limit -d 'A pair is lossy above this many packets resent per thousand sent (both ends\' port counters)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l expect-usec -d 'Expected latency (µs per iteration): the baseline where the fabric gives none (two endpoints)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l expect-mbit -d 'Expected WRITE bandwidth (Mbit/s), as --expect-usec' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l parallel -d 'Test at most N pairs of a round at once (default: all): for endpoints that share CPUs (a VM, oversubscribed hosts), where concurrent busy-polling tests slow each other' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l port-base -d 'Base of the TCP ports the pair tests listen on: rank R uses BASE+R' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l csv -d 'Also write the pairs as CSV' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l svg -d 'Also draw the matrix as an SVG heatmap' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l simulate-ranks -d 'With --simulate: this process plays N ranks, from --rank on (one thread each)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -l simulate -d 'Test the control plane only: pair tests return made-up figures at once (for scale tests of rank 0)'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -s h -l help -d 'Print help'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand fabric" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -s d -l ib-dev -d 'The device to walk from (default: the first InfiniBand port with a umad device)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -s i -l ib-port -d 'The port to walk from' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -l in-flight -d 'MADs outstanding at once (ibnetdiscover\'s -o; it keeps 2)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -l timeout -d 'The longest one MAD waits before it is sent again, in milliseconds (opensm\'s transaction timeout); resends start sooner, from the measured answer time, and back off up to it. Also how long a node may answer nothing before it, and what lies behind it, is reported unanswered' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -l retries -d 'Resends of an unanswered MAD before it is reported unanswered: many and quick (a MAD the fabric gives back is resent at once), so a switch that drops a third of its MADs is still walked whole; a dead node costs about one --timeout whatever N is' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -l interval -d 'Read the PMA counters a second time after SECS seconds and judge what they did in between (errors per second) instead of their totals' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -l baseline -d 'Compare with a previous `subnet -j` output or an ibnetdiscover topology file' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -l topology -d 'Write the subnet in ibnetdiscover\'s topology format to FILE' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -l svg -d 'Draw the topology to FILE as SVG, tiered from the hosts up, each link and node coloured by its worst finding (fail red, warn orange, info blue)' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -l no-counters -d 'Skip the PMA PortCounters of the link ends'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -l hosts -d 'List the channel adapters (hosts) in ibhosts\' format instead of the report'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -l switches -d 'List the switches in ibswitches\' format instead of the report'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -l reset-counters -d 'After the report, clear the PMA counters of every link end (a PMA Set; nothing is ever set without this flag)'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand subnet" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand qos" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand qos" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand qos" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand qos" -s d -l ib-dev -d 'Only this device (same as the positional DEV)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand qos" -s i -l ib-port -d 'Only this port' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand qos" -l tclass -d 'Judge this traffic class too, as a job sets it (perftest --tclass, NCCL_IB_TC): decimal (106), hex (0x6a) or a DSCP name (AF31)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand qos" -l interval -d 'Read the pause, ECN and RNR counters twice, SECS apart (run the job meanwhile), and judge what moved' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand qos" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand qos" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand qos" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand exporter" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand exporter" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand exporter" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand exporter" -l listen -d 'Serve /metrics on ADDR (HOST:PORT, [V6]:PORT, or :PORT for every address, IPv6 and IPv4)' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand exporter" -l textfile -d 'Write DIR/rdmactl.prom once (a temporary file renamed over it) and exit, for node_exporter\'s textfile collector (--collector.textfile.directory)' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand exporter" -l scrape-timeout -d 'Answer a scrape (or end a --textfile run) after SECS even when a read has not returned (a driver\'s sysfs file that blocks), with rdmactl_scrape_error naming it' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand exporter" -l expect -d 'Judge each scrape against this manifest (`doctor --expect`\'s, made by `doctor --save-expect`): its findings become rdmactl_finding series, so a device or port that disappears keeps failing instead of taking its alerts with it' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand exporter" -l collect -d 'Export only these groups of series (comma-separated), beside the ones always exported (counts, state, rates, MTUs, scrape errors): info, gids, pma, hw, qos, findings (docs/exporter.md gives each one\'s series per port)' -r -f -a "info\t''
gids\t''
pma\t''
hw\t''
qos\t''
findings\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand exporter" -l no-collect -d 'Leave these groups of series out (comma-separated; the same names as --collect)' -r -f -a "info\t''
gids\t''
pma\t''
hw\t''
qos\t''
findings\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand exporter" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand exporter" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand exporter" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand triage" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand triage" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand triage" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand triage" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand triage" -l no-host -d 'Judge the log alone: do not add this host\'s evidence (for a log copied from another cluster). By default a host that holds one of a failure\'s GIDs, or whose name the log gives, is checked as `check` would (port, GID slot, route toward the other end)'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand triage" -s h -l help -d 'Print help'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand triage" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand res" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand res" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand res" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand res" -s d -l ib-dev -d 'Only this device\'s resources' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand res" -l pid -d 'Only this process (repeatable); a process holding no QP and no MR is a finding' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand res" -l comm -d 'Only the processes with this command name (/proc/PID/comm), as --pid' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand res" -l interval -d 'Read twice, SECS apart, and judge what moved: an RTS QP whose PSNs stood still is stalled (its process stopped) or idle' -r
complete -c rdmactl -n "__fish_rdmactl_using_subcommand res" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand res" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand res" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand explain" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand explain" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand explain" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand explain" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand explain" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand explain" -s V -l version -d 'Print version'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand generate" -l color -d 'When to colour the output (`auto`: a terminal, unless NO_COLOR is set or TERM=dumb)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c rdmactl -n "__fish_rdmactl_using_subcommand generate" -l sysfs -d 'Read sysfs from DIR instead of /sys (a captured tree); verbs queries are skipped. pingpong and selftest refuse it: they run on this host\'s devices' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand generate" -l procfs -d 'With --sysfs: the same host\'s captured /proc (a sosreport\'s proc/), so doctor judges its memlock limit and loaded modules too; live /proc is never mixed with a capture' -r -F
complete -c rdmactl -n "__fish_rdmactl_using_subcommand generate" -s j -l json -d 'Print JSON instead of a table'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand generate" -s h -l help -d 'Print help'
complete -c rdmactl -n "__fish_rdmactl_using_subcommand generate" -s V -l version -d 'Print version'
