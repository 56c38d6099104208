# The packages (issue 28): scripts/package's .deb installed with dpkg -i in the guest, then
# the installed rdmactl, its man page and its bash completion used from the installed
# paths; the .rpm's file list read with rpm -qpl. The guest's root is the host's, read-only
# over 9p, so /usr, /etc and dpkg's state get tmpfs overlays for the install: dpkg itself
# runs unchanged. tests/vm/run builds both packages when this case is picked.
# vm-timeout: 300

deb=$(ls "$SHARE"/pkg/rdmactl_*.deb 2>/dev/null | head -1)
rpm=$(ls "$SHARE"/pkg/rdmactl-*.rpm 2>/dev/null | head -1)
check "tests/vm/run put a .deb on the share" test -s "$deb"
check "and an .rpm" test -s "$rpm"

# --- the .rpm's contents: rpm reads the package once per query (seconds each under TCG), so
# each query runs once and the checks read its output.
rpm -qplv "$rpm" >"$RESULTS/rpm-files" 2>&1
rpm -qpi "$rpm" >"$RESULTS/rpm-info" 2>&1
rpm -qp --scripts "$rpm" >"$RESULTS/rpm-scripts" 2>&1
rpm -qpL "$rpm" >"$RESULTS/rpm-licenses" 2>&1
for path in /usr/bin/rdmactl /usr/share/man/man1/rdmactl.1 /usr/share/man/man1/rdmactl-doctor.1 \
    /usr/share/bash-completion/completions/rdmactl /usr/share/zsh/site-functions/_rdmactl \
    /usr/share/fish/vendor_completions.d/rdmactl.fish /usr/share/doc/rdmactl/failures.md \
    /usr/lib/systemd/system/rdmactl-exporter.service /usr/lib/systemd/system/rdmactl-wait.service \
    /usr/libexec/rdmactl/rdmactl-healthcheck /etc/nhc/scripts/rdmactl.nhc; do
    expect_out "the rpm holds $path" "^-.* ${path}(\\.gz)?\$" cat "$RESULTS/rpm-files"
done
for dir in /usr/libexec/rdmactl /usr/share/doc/rdmactl /etc/nhc/scripts; do
    expect_out "the rpm owns the directory $dir" "^d.* ${dir}\$" cat "$RESULTS/rpm-files"
done
expect_out "the rpm says what it is" '^Name *: rdmactl' cat "$RESULTS/rpm-info"
expect_out "and describes itself beyond its summary" '^show_gids do, runs ping-pong' cat "$RESULTS/rpm-info"
expect_out "the rpm reloads systemd when it is removed or upgraded" 'systemctl daemon-reload' cat "$RESULTS/rpm-scripts"
expect_out "and stops and disables the units on erase" 'disable --now rdmactl-exporter.service' cat "$RESULTS/rpm-scripts"
expect_out "the rpm marks its license texts" '^/usr/share/licenses/rdmactl/LICENSE-MIT$' cat "$RESULTS/rpm-licenses"

# --- dpkg -i onto overlays of the read-only root
overlays=()
mount_overlay() { # DIR: a tmpfs upper layer over DIR
    local d=$1 o=/tmp/overlay$1
    mkdir -p "$o/up" "$o/work"
    mount -t overlay overlay -o "lowerdir=$d,upperdir=$o/up,workdir=$o/work" "$d" && overlays+=("$d")
}
modprobe overlay 2>/dev/null
for d in /usr /etc /var/lib /var/cache /var/log; do
    check "an overlay over $d" mount_overlay "$d"
done
# man-db's trigger would re-index every page of the host's /usr/share/man, over 9p under
# emulation (minutes); without auto-update it skips that, and man finds pages by path.
rm -f /var/lib/man-db/auto-update
expect_out "the .deb's control names its recommends" '^ Recommends: libibverbs1' dpkg-deb -I "$deb"
check "dpkg -i installs the .deb" dpkg -i "$deb"
expect_out "dpkg says it is installed" '^Status: install ok installed' dpkg -s rdmactl
expect_out "dpkg -L lists the binary" '^/usr/bin/rdmactl$' dpkg -L rdmactl
expect_out "dpkg -L lists the gzipped man page" '^/usr/share/man/man1/rdmactl\.1\.gz$' dpkg -L rdmactl
expect_out "dpkg -L lists the exporter's unit" '^/usr/lib/systemd/system/rdmactl-exporter\.service$' dpkg -L rdmactl
check "dpkg --verify finds every installed file as its md5sums say" dpkg --verify rdmactl
expect_out "the .deb carries md5sums" '^ *[0-9]+ bytes, +[0-9]+ lines +md5sums' dpkg-deb -I "$deb"
expect_out "its copyright file has a notice" '^Copyright: 2026 rdmactl developers' cat /usr/share/doc/rdmactl/copyright
check "its changelog is installed" test -s /usr/share/doc/rdmactl/changelog.Debian.gz
check "the Slurm health check is installed executable" test -x /usr/libexec/rdmactl/rdmactl-healthcheck
expect_out "the NHC check is a conffile" '^ ?/etc/nhc/scripts/rdmactl\.nhc ' dpkg-query -W -f='${Conffiles}\n' rdmactl
check "the installed binary is the one on PATH" test "$(command -v rdmactl)" = /usr/bin/rdmactl
expect_rc 0 "the installed rdmactl runs doctor on the healthy host" /usr/bin/rdmactl doctor
expect_out "the installed rdmactl lists rxe0" '^rxe0 ' /usr/bin/rdmactl devices
expect_out "man rdmactl reads the installed page" 'RDMA' env MANPAGER=cat man rdmactl
expect_out "man rdmactl-doctor reads the installed page" 'rdmactl-doctor\(1\)' env MANPAGER=cat man rdmactl-doctor
# bash-completion loads the installed completion on demand, as an interactive shell does.
complete_words() { # words...: what the installed completion offers for the last word
    bash -c '
        source /usr/share/bash-completion/bash_completion
        _comp_load rdmactl 2>/dev/null || _completion_loader rdmactl
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        $(complete -p rdmactl | sed "s/.*-F \([^ ]*\).*/\1/") rdmactl "${@: -1}" "${@: -2:1}"
        printf "%s\n" "${COMPREPLY[@]}"' complete "$@"
}
expect_out "bash completion from the installed file offers subcommands" '^doctor$' complete_words rdmactl do
expect_out "and the devices of this host" '^rxe0$' complete_words rdmactl ports rx
check "dpkg -r removes it" dpkg -r rdmactl
check "the binary is gone" test ! -e /usr/bin/rdmactl

for ((i = ${#overlays[@]} - 1; i >= 0; i--)); do umount -l "${overlays[$i]}"; done
