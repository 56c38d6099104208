#!/bin/bash
# The guest side of tests/vm/pci-parity (run by tests/vm/init in the q35 guest, as root).
set -u
rc=0
test_name=gather::pci::lspci_tests::decoder_matches_lspci_on_this_host
# parity AS: the unit test run as that user; its figures and verdict printed, its status kept.
parity() {
    local out
    out=$(su "$1" -s /bin/bash -c "/tmp/share/bin/rdmactl-unit --include-ignored --exact $test_name --nocapture" 2>&1)
    local status=$?
    grep -E "lspci parity|test result|panicked|left|right" <<<"$out"
    ((status == 0)) || rc=1
}
echo "=== GUEST: $(lspci | wc -l) PCI functions"
lspci -tv 2>/dev/null
# ACS on the first root port, as a BIOS with ACS on leaves it (the `pcie-acs` fix in reverse):
# the parity test then compares set bits too, not only a control register of zero.
setpci -s 00:04.0 ECAP_ACS+6.w=001d || rc=1
lspci -vvv -s 00:04.0 2>/dev/null | grep ACSCtl
echo "=== GUEST: parity as root"
parity root
echo "=== GUEST: parity as nobody (config space past 64 bytes is denied)"
chmod 755 /tmp/share /tmp/share/bin
parity nobody
echo "=== GUEST: rc=$rc"
exit $rc
