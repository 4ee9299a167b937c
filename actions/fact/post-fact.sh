#!/usr/bin/env bash
# post-fact.sh is the ripcord action's one step: it posts a task fact about
# this deploy job to ripcord's POST /api/v1/facts, authenticated by the
# job's GitHub Actions OIDC token. With mode: probe it runs probe.sh
# instead, which sends a rollout's probes from this runner and posts what
# it saw.
#
# Inputs arrive as INPUT_* variables that action.yml sets (composite actions
# get none automatically). Needs bash and curl only: the JSON is built here
# with careful escaping rather than with jq or python3, which self-hosted
# runners and slim job containers may not have.
#
# A ripcord outage must never fail a deploy: unless fail-on-error is true,
# every problem (bad input, missing permission, server down) ends in a
# ::warning:: and exit 0.
#
# For tests: RIPCORD_RETRY_DELAYS overrides the waits between attempts
# (seconds, space-separated; default "1 2", so three attempts).

set -uo pipefail

RETRY_DELAYS=${RIPCORD_RETRY_DELAYS:-1 2}

# --- reporting ----------------------------------------------------------

# command_escape makes text safe inside a workflow command (::warning::),
# where a newline would end the message and % starts an escape.
command_escape() {
  local s=$1
  s=${s//'%'/'%25'}
  s=${s//$'\r'/'%0D'}
  s=${s//$'\n'/'%0A'}
  printf '%s' "$s"
}

fail_on_error() { [[ $FAIL_ON_ERROR == true ]]; }

# read_fail_on_error sets FAIL_ON_ERROR from the input, true or false in
# any case. Anything else is taken as false, the safe side for a deploy,
# with a warning that names it: a silent false would hide a typo until the
# day ripcord is down.
read_fail_on_error() {
  local v=${INPUT_FAIL_ON_ERROR:-false}
  FAIL_ON_ERROR=false
  # Patterns, not ${v,,}: macOS ships bash 3.2.
  case $v in
  [Tt][Rr][Uu][Ee]) FAIL_ON_ERROR=true ;;
  [Ff][Aa][Ll][Ss][Ee]) ;;
  *) echo "::warning title=ripcord::$(command_escape "input fail-on-error must be true or false, got \"$v\": taking false (a failed post only warns)")" ;;
  esac
}

# fail reports a problem and ends the step: an error when fail-on-error is
# true, otherwise a warning that leaves the deploy alone.
fail() {
  if fail_on_error; then
    echo "::error title=ripcord::$(command_escape "$1")"
    exit 1
  fi
  echo "::warning title=ripcord::$(command_escape "$1 (fail-on-error is false: the job goes on)")"
  exit 0
}

# --- encoding -----------------------------------------------------------

# Control characters other than \b \f \n \r \t, and their \u00XX escapes.
CONTROLS=()
CONTROL_ESCAPES=()
for ((i = 1; i < 32; i++)); do
  case $i in 8 | 9 | 10 | 12 | 13) continue ;; esac
  printf -v hex '%02x' "$i"
  printf -v c '%b' "\\x$hex"
  CONTROLS+=("$c")
  CONTROL_ESCAPES+=("\\u00$hex")
done

# json_string prints s as a JSON string literal. Bytes from 0x80 up are left
# as they are: JSON text is UTF-8.
json_string() {
  local s=$1 bs=\\ q='"' i
  s=${s//"$bs"/"$bs$bs"}
  s=${s//"$q"/"$bs$q"}
  s=${s//$'\n'/"${bs}n"}
  s=${s//$'\r'/"${bs}r"}
  s=${s//$'\t'/"${bs}t"}
  s=${s//$'\b'/"${bs}b"}
  s=${s//$'\f'/"${bs}f"}
  for ((i = 0; i < ${#CONTROLS[@]}; i++)); do
    s=${s//"${CONTROLS[i]}"/"${CONTROL_ESCAPES[i]}"}
  done
  printf '"%s"' "$s"
}

# urlencode percent-encodes every byte but RFC 3986's unreserved ones.
urlencode() {
  local LC_ALL=C
  local s=$1 out='' c hex i
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    case $c in
    [a-zA-Z0-9.~_-]) out+=$c ;;
    *)
      printf -v hex '%%%02X' "'$c"
      out+=$hex
      ;;
    esac
  done
  printf '%s' "$out"
}

# json_value prints the value of key in a flat JSON object (a string's
# escapes are left as they are), or nothing.
json_value() {
  local re='"'"$1"'"[[:space:]]*:[[:space:]]*("(([^"\\]|\\.)*)"|(-?[0-9][0-9.eE+-]*|true|false))'
  if [[ $2 =~ $re ]]; then
    printf '%s' "${BASH_REMATCH[2]}${BASH_REMATCH[4]}"
  fi
}

# --- HTTP ---------------------------------------------------------------

# one_line joins text's lines with spaces, for a plain log line: a line of
# a server's answer that began with :: would be a workflow command.
one_line() {
  local s=${1//$'\r'/ }
  printf '%s' "${s//$'\n'/ }"
}

# display_unescape undoes a JSON string's escapes for a log line: \" \\ \/
# and the ASCII \u00XX that Go's encoder writes for < > &; a control
# character becomes a space, and other \u escapes are left as they are.
display_unescape() {
  local s=$1 out='' c hex i
  for ((i = 0; i < ${#s}; i++)); do
    c=${s:i:1}
    if [[ $c != \\ ]]; then
      out+=$c
      continue
    fi
    i=$((i + 1))
    c=${s:i:1}
    case $c in
    b | f | n | r | t) out+=' ' ;;
    u)
      hex=${s:i+1:4}
      if [[ $hex =~ ^00[0-7][0-9a-fA-F]$ ]]; then
        i=$((i + 4))
        if ((16#$hex < 32 || 16#$hex == 127)); then
          out+=' '
        else
          printf -v c '%b' "\\x${hex:2}"
          out+=$c
        fi
      else
        out+='\u'
      fi
      ;;
    *) out+=$c ;;
    esac
  done
  printf '%s' "$out"
}

# answer_text is how a refusal in FILE is shown: ripcord's JSON error
# ({"error", "field"}) as its message on one line, anything else (a
# proxy's page, GitHub's answer) as the first 2000 bytes it sent.
answer_text() {
  local body error field
  body=$(head -c 2000 "$1" 2>/dev/null)
  if [[ $body =~ ^[[:space:]]*\{.*\}[[:space:]]*$ ]]; then
    error=$(json_value error "$body")
    field=$(json_value field "$body")
    if [[ -n $error ]]; then
      printf '%s' "$(one_line "$(display_unescape "$error")")${field:+ (field $(display_unescape "$field"))}"
      return
    fi
  fi
  printf '%s' "$body"
}

# request WHAT URL OUT [curl options...] makes one HTTP request, retrying
# connection errors and 5xx after each of RETRY_DELAYS. It returns 0 on a
# 2xx, with the body in OUT; otherwise 1, with REQUEST_ERROR saying why. A
# 4xx is not retried: the same request gets the same refusal. Either way
# REQUEST_CODE is the last HTTP status (000: no answer) and
# REQUEST_LOCATION where a 3xx pointed.
request() {
  local what=$1 url=$2 out=$3
  shift 3
  local -a delays
  read -r -a delays <<<"$RETRY_DELAYS"
  local attempt=1 res code rc why retry
  while :; do
    res=$(curl -sS -o "$out" -w '%{http_code} %{redirect_url}' --connect-timeout "$TIMEOUT" --max-time "$TIMEOUT" \
      "$@" "$url" 2>"$WORK/curl.err")
    rc=$?
    code=${res%% *}
    REQUEST_CODE=${code:-000} REQUEST_LOCATION=${res#* }
    ((rc == 0)) || REQUEST_CODE=000
    if ((rc == 0)) && [[ $code == 2?? ]]; then
      return 0
    fi
    if ((rc != 0)); then
      why="$(head -c 500 "$WORK/curl.err")"
      why=${why:-curl exited $rc}
      retry=1
    else
      why="HTTP $code: $(answer_text "$out")"
      [[ $code == 5?? ]] && retry=1 || retry=0
    fi
    if ((retry == 0 || attempt > ${#delays[@]})); then
      REQUEST_ERROR="$what failed after $attempt attempt(s): $why"
      return 1
    fi
    echo "ripcord: $what: attempt $attempt failed ($(one_line "$why")); retrying in ${delays[attempt - 1]}s"
    sleep "${delays[attempt - 1]}"
    attempt=$((attempt + 1))
  done
}

# MAX_TIMEOUT bounds input timeout: the step holds the deploy job for up to
# 6 × timeout + 6 seconds when ripcord is down, and a minute per attempt is
# already far more than a healthy ripcord needs.
MAX_TIMEOUT=60

# check_timeout refuses a timeout that is not a number, and lowers one
# above MAX_TIMEOUT to it with a warning rather than failing the step.
check_timeout() {
  [[ ${TIMEOUT} =~ ^[1-9][0-9]*$ ]] || fail "input timeout must be a whole number of seconds, got \"$TIMEOUT\""
  # By length first: a long number would overflow bash's arithmetic.
  if ((${#TIMEOUT} > ${#MAX_TIMEOUT} || TIMEOUT > MAX_TIMEOUT)); then
    echo "::warning title=ripcord::$(command_escape "input timeout is at most $MAX_TIMEOUT seconds, got \"$TIMEOUT\": using $MAX_TIMEOUT")"
    TIMEOUT=$MAX_TIMEOUT
  fi
}

# --- the fact -----------------------------------------------------------

validate() {
  command -v curl >/dev/null 2>&1 || fail "curl is not installed on this runner; the ripcord action needs it"
  [[ ${INPUT_SERVER:-} =~ ^https?://[^/[:space:]]+(/[^[:space:]]*)?$ ]] ||
    fail "input server must be an http(s) URL such as https://ripcord.example.com, got \"${INPUT_SERVER:-}\""
  case ${INPUT_STATUS:-} in
  in_progress | success | failed | cancelled) ;;
  *) fail "input status must be in_progress, success, failed or cancelled, got \"${INPUT_STATUS:-}\"" ;;
  esac
  local pair
  for pair in app:INPUT_APP environment:INPUT_ENVIRONMENT release-id:INPUT_RELEASE_ID; do
    local var=${pair#*:}
    [[ -n ${!var:-} ]] || fail "input ${pair%%:*} is required"
  done
  if [[ -n ${INPUT_FAILURE_TYPE:-} && $INPUT_STATUS != failed ]]; then
    fail "input failure-type is only meaningful with status failed, got status \"$INPUT_STATUS\""
  fi
  check_timeout
  [[ ${GITHUB_REPOSITORY:-} =~ ^[^/]+/[^/]+$ ]] ||
    fail "GITHUB_REPOSITORY is \"${GITHUB_REPOSITORY:-}\", want owner/name: run this action in a GitHub Actions job"
  [[ ${GITHUB_RUN_ID:-} =~ ^[1-9][0-9]*$ ]] ||
    fail "GITHUB_RUN_ID is \"${GITHUB_RUN_ID:-}\", want a run id: run this action in a GitHub Actions job"
  [[ ${RUN_ATTEMPT} =~ ^[1-9][0-9]*$ ]] || fail "GITHUB_RUN_ATTEMPT is \"$RUN_ATTEMPT\", want a number"
}

# fact_json prints the task fact. Empty optional fields are left out; the
# run id and attempt are JSON numbers.
fact_json() {
  local observed_at
  observed_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  local out='{"source":"task"'
  out+=',"repository":'$(json_string "$GITHUB_REPOSITORY")
  out+=',"workflow_run_id":'$GITHUB_RUN_ID
  out+=',"run_attempt":'$RUN_ATTEMPT
  out+=',"status":'$(json_string "$INPUT_STATUS")
  [[ -n ${INPUT_FAILURE_TYPE:-} ]] && out+=',"failure_type":'$(json_string "$INPUT_FAILURE_TYPE")
  out+=',"app":'$(json_string "$INPUT_APP")
  out+=',"environment":'$(json_string "$INPUT_ENVIRONMENT")
  [[ -n ${INPUT_CLUSTER:-} ]] && out+=',"cluster":'$(json_string "$INPUT_CLUSTER")
  [[ -n ${INPUT_VERSION:-} ]] && out+=',"version":'$(json_string "$INPUT_VERSION")
  out+=',"release_id":'$(json_string "$INPUT_RELEASE_ID")
  [[ -n ${INPUT_IMAGE:-} ]] && out+=',"images":['$(json_string "$INPUT_IMAGE")']'
  out+=',"observed_at":"'$observed_at'"'
  local meta='' key env
  for key in commit:GITHUB_SHA actor:GITHUB_ACTOR ref:GITHUB_REF workflow:GITHUB_WORKFLOW job:GITHUB_JOB; do
    env=${key#*:}
    [[ -n ${!env:-} ]] || continue
    meta+=${meta:+,}$(json_string "${key%%:*}")':'$(json_string "${!env}")
  done
  out+=',"metadata":{'$meta'}}'
  printf '%s' "$out"
}

# oidc_token sets TOKEN to the job's OIDC token for the audience. It runs
# in the main shell, not in $(...), so that fail can end the step.
oidc_token() {
  local unset=ACTIONS_ID_TOKEN_REQUEST_URL
  [[ -n ${ACTIONS_ID_TOKEN_REQUEST_URL:-} ]] && unset=ACTIONS_ID_TOKEN_REQUEST_TOKEN
  if [[ -z ${ACTIONS_ID_TOKEN_REQUEST_URL:-} || -z ${ACTIONS_ID_TOKEN_REQUEST_TOKEN:-} ]]; then
    fail "cannot get an OIDC token: $unset is not set; the job needs \`permissions: id-token: write\` (a job's own permissions block replaces the workflow's; runs for pull requests from forks get no OIDC token at all)"
  fi
  local sep='?'
  [[ $ACTIONS_ID_TOKEN_REQUEST_URL == *\?* ]] && sep='&'
  # Secrets go to curl in a file, not on its command line, where any
  # process on a self-hosted runner could read them.
  printf 'Authorization: bearer %s\n' "$ACTIONS_ID_TOKEN_REQUEST_TOKEN" >"$WORK/token.hdr"
  request "OIDC token request" "$ACTIONS_ID_TOKEN_REQUEST_URL${sep}audience=$(urlencode "$AUDIENCE")" \
    "$WORK/token.json" -H @"$WORK/token.hdr" || fail "$REQUEST_ERROR"
  TOKEN=$(json_value value "$(<"$WORK/token.json")")
  [[ -n $TOKEN ]] || fail "the OIDC token endpoint answered without a token value"
  echo "::add-mask::$TOKEN"
}

# ripcord_advice says what to do about the failed post in REQUEST_*.
ripcord_advice() {
  case $REQUEST_CODE in
  000)
    printf '%s' "No answer from $SERVER: check that input server is ripcord's public_url and that this runner can reach it (DNS, firewall, proxy, TLS certificate)"
    ;;
  3??)
    printf '%s' "$SERVER/api/v1/facts redirects${REQUEST_LOCATION:+ to $REQUEST_LOCATION}, which is not followed: set input server to ripcord's public_url"
    ;;
  401)
    printf '%s' "The token was requested for audience \"$AUDIENCE\" (input audience; empty: input server), which must be ripcord's oidc.audience (its public_url unless set)"
    ;;
  404 | 405)
    printf '%s' "$SERVER/api/v1/facts is not ripcord's facts API: set input server to ripcord's public_url (e.g. https://ripcord.example.com, no path)"
    ;;
  5??)
    printf '%s' "ripcord at $SERVER is down or failing and did not record the fact: its operator can see why in its log"
    ;;
  *)
    printf '%s' "ripcord's answer above says what it refused"
    ;;
  esac
}

# fail_post reports the failed post in REQUEST_*. A server older than the
# cancelled status refuses it with a 400 on field status: that is no
# problem of the deploy or of the inputs, so say plainly what to do.
fail_post() {
  if [[ $INPUT_STATUS == cancelled && $REQUEST_CODE == 400 &&
    $(json_value field "$(head -c 2000 "$WORK/answer.json" 2>/dev/null)") == status ]]; then
    fail "ripcord at $SERVER does not know status cancelled: it is older than this action, upgrade the server. Until then a cancelled deploy cannot be recorded, and release $INPUT_RELEASE_ID stays as its last fact left it ($(one_line "$REQUEST_ERROR"))"
  fi
  fail "$REQUEST_ERROR. $(ripcord_advice)"
}

set_output() {
  [[ -n ${GITHUB_OUTPUT:-} ]] || return 0
  local v=${2//$'\n'/ }
  printf '%s=%s\n' "$1" "${v//$'\r'/}" >>"$GITHUB_OUTPUT"
}

main() {
  SERVER=${INPUT_SERVER:-}
  while [[ $SERVER == */ ]]; do SERVER=${SERVER%/}; done
  AUDIENCE=${INPUT_AUDIENCE:-$SERVER}
  TIMEOUT=${INPUT_TIMEOUT:-10}
  RUN_ATTEMPT=${GITHUB_RUN_ATTEMPT:-1}
  read_fail_on_error
  case ${INPUT_MODE:-fact} in
  fact) ;;
  probe)
    # shellcheck source=actions/fact/probe.sh
    source "$(dirname "${BASH_SOURCE[0]}")/probe.sh"
    probe_main
    return
    ;;
  *) fail "input mode must be fact or probe, got \"$INPUT_MODE\"" ;;
  esac
  validate

  WORK=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/ripcord.XXXXXX") || fail "cannot create a temporary directory"
  trap 'rm -rf "$WORK"' EXIT
  umask 077

  oidc_token
  local body
  body=$(fact_json)
  echo "ripcord: posting task fact to $SERVER/api/v1/facts: $body"
  printf '%s' "$body" >"$WORK/fact.json"
  printf 'Authorization: Bearer %s\n' "$TOKEN" >"$WORK/fact.hdr"
  request "POST $SERVER/api/v1/facts" "$SERVER/api/v1/facts" "$WORK/answer.json" \
    -X POST -H @"$WORK/fact.hdr" -H 'Content-Type: application/json' -H 'Accept: application/json' \
    --data-binary @"$WORK/fact.json" || fail_post

  local answer id outcome state release
  answer=$(<"$WORK/answer.json")
  id=$(json_value id "$answer")
  outcome=$(json_value outcome "$answer")
  state=$(json_value state "$answer")
  release=$(json_value release_id "$answer")
  # A server that answers any POST with 200 (a web site's catch-all page)
  # is not ripcord, and nothing was recorded: say so rather than succeed.
  [[ -n $id && -n $outcome ]] ||
    fail "$SERVER answered HTTP $REQUEST_CODE without a fact id and outcome, so it is not ripcord and nothing was recorded: $(head -c 500 "$WORK/answer.json"). Set input server to ripcord's public_url"
  echo "ripcord: answered $(one_line "$answer")"
  echo "ripcord: fact $id was $outcome; release ${release:-?} is ${state:-unknown}"
  set_output fact-id "$id"
  set_output outcome "$outcome"
  set_output state "$state"
}

main "$@"
