# shellcheck shell=bash
# probe.sh is the action's mode: probe, sourced by post-fact.sh (whose
# helpers it uses). A rollout's probe workflow runs it on the runners of a
# region at each health reading: it sends every probe of the probes input
# (a JSON list of {"url", "host", "expect_status"} that ripcord built, with
# {host} substituted) from this runner, where the targets are reachable,
# and posts what it saw to POST {server}/api/v1/rollouts/{rollout-id}/probes,
# authenticated by the job's OIDC token like a fact. ripcord judges the
# results itself; a probe that fails here does not fail the step.

probe_validate() {
  command -v curl >/dev/null 2>&1 || fail "curl is not installed on this runner; the ripcord action needs it"
  [[ ${INPUT_SERVER:-} =~ ^https?://[^/[:space:]]+(/[^[:space:]]*)?$ ]] ||
    fail "input server must be an http(s) URL such as https://ripcord.example.com, got \"${INPUT_SERVER:-}\""
  [[ -n ${INPUT_ROLLOUT_ID:-} ]] || fail "input rollout-id is required with mode probe (the probe workflow's rollout_id input)"
  [[ -n ${INPUT_READING:-} ]] || fail "input reading is required with mode probe (the probe workflow's reading input)"
  [[ ${INPUT_PROBES:-} =~ ^[[:space:]]*\[.*\][[:space:]]*$ ]] ||
    fail "input probes must be the JSON list of the probe workflow's probes input, got \"${INPUT_PROBES:-}\""
  check_timeout
  [[ ${GITHUB_RUN_ID:-} =~ ^[1-9][0-9]*$ ]] ||
    fail "GITHUB_RUN_ID is \"${GITHUB_RUN_ID:-}\", want a run id: run this action in a GitHub Actions job"
}

# json_unescape undoes the escapes ripcord's encoder writes in a URL or a
# host: \" \\ and \/.
json_unescape() {
  local s=$1 out='' i c
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    if [[ $c == \\ ]]; then
      i=$((i + 1))
      c=${s:i:1}
    fi
    out+=$c
  done
  printf '%s' "$out"
}

# probe_one sends one probe and sets STATUS (0 when no answer came) and
# PROBE_ERROR. Redirects are not followed: the target's own answer is judged.
probe_one() {
  local code
  if code=$(curl -sS -o /dev/null -w '%{http_code}' --proto '=http,https' --connect-timeout "$TIMEOUT" \
    --max-time "$TIMEOUT" "$1" 2>"$WORK/probe.err") && [[ $code =~ ^[1-9][0-9][0-9]$ ]]; then
    STATUS=$code PROBE_ERROR=''
    return
  fi
  STATUS=0
  PROBE_ERROR=$(head -c 300 "$WORK/probe.err")
  PROBE_ERROR=${PROBE_ERROR#curl: }
  PROBE_ERROR=${PROBE_ERROR:-no answer}
}

# probe_results sends every probe and sets RESULTS to what it saw, as a
# JSON list. It runs in the main shell, not in $(...), so that fail can end
# the step.
probe_results() {
  local rest=$INPUT_PROBES obj url host out='' n=0
  local re='^[^{]*(\{[^{}]*\})(.*)$'
  while [[ $rest =~ $re ]]; do
    obj=${BASH_REMATCH[1]}
    rest=${BASH_REMATCH[2]}
    url=$(json_unescape "$(json_value url "$obj")")
    host=$(json_unescape "$(json_value host "$obj")")
    [[ $url =~ ^https?:// ]] || fail "probes[$n] has no http(s) url: $obj"
    probe_one "$url"
    echo "ripcord: probe $url: ${PROBE_ERROR:-status $STATUS}"
    out+=${out:+,}'{"url":'$(json_string "$url")',"host":'$(json_string "$host")',"status":'$STATUS
    [[ -n $PROBE_ERROR ]] && out+=',"error":'$(json_string "$PROBE_ERROR")
    out+='}'
    n=$((n + 1))
  done
  RESULTS="[$out]"
}

probe_main() {
  probe_validate
  WORK=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/ripcord.XXXXXX") || fail "cannot create a temporary directory"
  trap 'rm -rf "$WORK"' EXIT
  umask 077

  local body url
  probe_results
  oidc_token
  body='{"reading":'$(json_string "$INPUT_READING")',"workflow_run_id":'$GITHUB_RUN_ID',"results":'$RESULTS'}'
  url="$SERVER/api/v1/rollouts/$(urlencode "$INPUT_ROLLOUT_ID")/probes"
  echo "ripcord: posting probe results to $url: $body"
  printf '%s' "$body" >"$WORK/probes.json"
  printf 'Authorization: Bearer %s\n' "$TOKEN" >"$WORK/probes.hdr"
  request "POST $url" "$url" "$WORK/answer.json" \
    -X POST -H @"$WORK/probes.hdr" -H 'Content-Type: application/json' -H 'Accept: application/json' \
    --data-binary @"$WORK/probes.json" || fail "$REQUEST_ERROR"

  local answer
  answer=$(<"$WORK/answer.json")
  echo "ripcord: answered $answer"
  set_output outcome "$(json_value outcome "$answer")"
}
