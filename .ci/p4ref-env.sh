# Source this (bash): puts a reference BMv2 + p4c build (a p4ref folder: bin/, lib/, nolog/)
# first on PATH, for CI and for developers who have one. The project never needs it: without
# BMv2 and p4c the bmv2 tests skip and say why.
#
#   . .ci/p4ref-env.sh [P4REF_DIR]      # default: ../shared/p4ref beside the checkout
#
# Why not the folder's own env.sh: its lib/*.so symlinks are stored as small text files naming
# their target ("file too short" when simple_switch loads them). The folder stays untouched:
# real symlinks to its libraries go into a per-user folder under $TMPDIR, and that folder goes
# first on LD_LIBRARY_PATH. The logging-free build (nolog/) gets a wrapper on PATH,
# `simple_switch_nolog`, with its own library folder (both builds' libraries share sonames).
# Sets P4REF_ENV_OK=1 when the tools are usable, and says what is missing otherwise.

_p4ref_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_p4ref=${1:-${P4REF:-$_p4ref_repo/../shared/p4ref}}
P4REF_ENV_OK=0
if [ ! -d "$_p4ref/bin" ] || [ ! -d "$_p4ref/lib" ]; then
  echo "p4ref-env: no reference build at $_p4ref (bin/ and lib/): BMv2 tests will skip" >&2
else
  _p4ref=$(cd "$_p4ref" && pwd)
  _p4ref_tmp="${TMPDIR:-/tmp}/gdml-p4ref.$(id -u)"

  # _p4ref_link SRC_LIB_DIR DEST_DIR: a real symlink in DEST for every file of SRC; a file that
  # is a stored symlink (a few bytes naming a sibling) points straight at that sibling.
  _p4ref_link() {
    mkdir -p "$2" || return 1
    local f name target
    for f in "$1"/*.so*; do
      [ -f "$f" ] || continue
      name=$(basename "$f")
      target=$f
      if [ "$(stat -c %s "$f")" -lt 256 ]; then
        target="$1/$(tr -d '\n' < "$f")"
        [ -f "$target" ] || { echo "p4ref-env: $f names $target, which does not exist" >&2; return 1; }
      fi
      ln -sfn "$target" "$2/$name" || return 1
    done
  }

  if _p4ref_link "$_p4ref/lib" "$_p4ref_tmp/lib"; then
    export PATH="$_p4ref/bin:$_p4ref_tmp/bin:$PATH"
    export LD_LIBRARY_PATH="$_p4ref_tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    P4REF_ENV_OK=1
    if [ -x "$_p4ref/nolog/bin/simple_switch" ] && _p4ref_link "$_p4ref/nolog/lib" "$_p4ref_tmp/nolog-lib"; then
      mkdir -p "$_p4ref_tmp/bin"
      printf '#!/bin/sh\n# BMv2 simple_switch, logging-free build (written by .ci/p4ref-env.sh)\nLD_LIBRARY_PATH=%s exec %s "$@"\n' \
        "$_p4ref_tmp/nolog-lib" "$_p4ref/nolog/bin/simple_switch" > "$_p4ref_tmp/bin/simple_switch_nolog.new"
      chmod +x "$_p4ref_tmp/bin/simple_switch_nolog.new"
      mv -f "$_p4ref_tmp/bin/simple_switch_nolog.new" "$_p4ref_tmp/bin/simple_switch_nolog"
    fi
  fi
  unset -f _p4ref_link
  unset _p4ref_tmp
fi
unset _p4ref _p4ref_repo
export P4REF_ENV_OK
