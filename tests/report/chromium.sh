# tests/report/chromium.sh: headless Chromium for the tests that look at plume's HTML
# pages (test-report-html.sh: the profile report; test-score-report.sh: plume score's).
# Sourced; the caller sets `scratch` (a folder it owns) and defines fail MESSAGE.
#
#   chromium_find                 sets $chromium, or exits 77 (skipped) with a message
#   render PAGE NAME              screenshot $scratch/NAME.png, Chromium's log NAME.log
#   dump_dom PAGE NAME            the DOM Chromium builds, to $scratch/NAME.dom
#   page_lines LOG PAGE           the log's lines that come from the page (console, errors)
#
# Everything Chromium keeps goes to the scratch folder, not $HOME. $CHROMIUM names another
# binary.

chromium_find() {
  chromium=${CHROMIUM:-}
  if [[ -z $chromium ]]; then
    chromium=$(command -v chromium || command -v chromium-browser || true)
  fi
  if [[ -z $chromium ]]; then
    echo "SKIP: chromium is not installed (scripts/install-deps installs it)"
    exit 77
  fi
  mkdir -p "$scratch/home"
}

# chromium_run NAME ARGS...: Chromium on its own profile and home in the scratch folder.
chromium_run() {
  local name=$1
  shift
  HOME="$scratch/home" XDG_CONFIG_HOME="$scratch/home" XDG_CACHE_HOME="$scratch/home" \
    timeout 120 "$chromium" --headless --no-sandbox --disable-gpu \
      --disable-background-networking --no-first-run --user-data-dir="$scratch/profile-$name" "$@"
}

render() {
  local page=$1 out=$2
  chromium_run "$out" --enable-logging=stderr --v=0 --window-size=1280,4000 \
    --screenshot="$scratch/$out.png" "file://$page" 2>"$scratch/$out.log" ||
    fail "chromium exited with $? on $page (log: $scratch/$out.log)"
  [[ -s $scratch/$out.png ]] || fail "chromium wrote no screenshot of $page"
}

dump_dom() {
  local page=$1 out=$2
  chromium_run "dom-$out" --dump-dom "file://$page" >"$scratch/$out.dom" 2>"$scratch/$out.dom.log" ||
    fail "chromium --dump-dom exited with $? on $page"
}

# The lines of log $1 that come from page $2 (file://$2): console messages ("...:CONSOLE:7]"
# or, in older versions, "CONSOLE(7)"), uncaught exceptions, and errors naming the
# page. Chromium's own noise (D-Bus, VA-API, the sandbox) names none of these.
page_lines() {
  grep -E ":CONSOLE[:(]|Uncaught|file://$2" "$1" || true
}
