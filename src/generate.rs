//! Man pages and shell completions, generated from the clap definition so they never
//! drift from the real flags. `tests/generated.rs` fails when the committed copies are stale.

use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;
use clap_mangen::roff::{bold, roman, Roff};

use crate::cli::{Cli, GenerateArgs, ENVIRONMENT, EXIT_CODES};
use crate::error::{Error, Result};

pub fn run(args: &GenerateArgs) -> Result<u8> {
    for (path, bytes) in artifacts() {
        let path = args.dir.join(path);
        let io_err = |source| Error::Io {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io_err)?;
        }
        std::fs::write(&path, bytes).map_err(io_err)?;
    }
    Ok(crate::exit::OK)
}

/// Every generated file, relative to the repository root.
pub fn artifacts() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut cmd = Cli::command();
    // Building propagates the global flags (-j, --color, --sysfs) into every subcommand
    // and names each one as it is typed (`rdmactl pingpong`), which its page shows.
    cmd.build();
    man_pages(&cmd, &mut files);
    for (shell, file) in [
        (Shell::Bash, "rdmactl.bash"),
        (Shell::Zsh, "_rdmactl"),
        (Shell::Fish, "rdmactl.fish"),
    ] {
        let mut buf = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), "rdmactl", &mut buf);
        if shell == Shell::Bash {
            buf.extend_from_slice(BASH_DEVICES.as_bytes());
        }
        files.push((PathBuf::from(format!("completions/{file}")), buf));
    }
    files
}

/// A page for the command and, recursively, for each subcommand that is not hidden: every
/// page a SUBCOMMANDS section names (`rdmactl-gid-decode(1)`) is shipped.
fn man_pages(cmd: &clap::Command, files: &mut Vec<(PathBuf, Vec<u8>)>) {
    let name = cmd.get_display_name().unwrap_or(cmd.get_name()).to_string();
    files.push((Path::new("man").join(format!("{name}.1")), render_man(cmd)));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        man_pages(sub, files);
    }
}

fn render_man(cmd: &clap::Command) -> Vec<u8> {
    // The exit codes and environment get sections of their own below, not an EXTRA one.
    let page = cmd.clone().after_long_help(None::<&str>);
    let mut buf = Vec::new();
    // Writing into a Vec cannot fail.
    let version = cmd.get_version().unwrap_or_default();
    clap_mangen::Man::new(page)
        .source(format!("rdmactl {version}"))
        .render(&mut buf)
        .expect("render man page into memory");
    let text = String::from_utf8(buf).expect("clap_mangen writes UTF-8");
    let extra = sections(cmd);
    // Before VERSION, where man pages put them; at the end if there is no VERSION.
    let at = text.find(".SH VERSION").unwrap_or(text.len());
    format!("{}{extra}{}", &text[..at], &text[at..]).into_bytes()
}

/// EXIT STATUS, ENVIRONMENT and, on a subcommand's page, SEE ALSO.
fn sections(cmd: &clap::Command) -> String {
    let mut roff = Roff::new();
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in EXIT_CODES {
        roff.control("TP", []).text([bold(code.to_string())]);
        roff.text([roman(*meaning)]);
    }
    roff.control("SH", ["ENVIRONMENT"]);
    for (name, meaning) in ENVIRONMENT {
        roff.control("TP", []).text([bold(*name)]);
        roff.text([roman(*meaning)]);
    }
    if cmd.get_name() != "rdmactl" {
        roff.control("SH", ["SEE ALSO"]);
        roff.text([bold("rdmactl"), roman("(1)")]);
    }
    // Render strips nothing but adds roff's apostrophe preamble, which the page has already.
    let text = roff.render();
    let body = text.find(".SH").unwrap_or(0);
    text[body..].to_string()
}

/// clap's bash completion knows flags, not devices: this wraps it so `-d`/`--ib-dev`, and
/// the `DEV[/PORT]` argument of `ports` and `gids`, complete to the devices sysfs lists
/// when TAB is pressed (from `--sysfs DIR` on the line, else RDMACTL_SYSFS, else /sys),
/// so a device created after installation is offered too.
const BASH_DEVICES: &str = r#"
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
"#;
