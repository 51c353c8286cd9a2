#!/usr/bin/env bash
# Each command's options are declared once (tools/cli/options.h), and its
# parser and --help are both made from the declaration. This holds them to
# each other from outside: every option `sluice help --options` declares is
# listed in its command's --help and is recognised by its parser, and every
# option a command's --help lists is declared. TAP output.
set -u
sluice=$1

. "$(dirname "$0")/tap.sh"

declared=$("$sluice" help --options 2>&1)
rc=$?
if [ "$rc" -ne 0 ] || [ -z "$declared" ]; then
  not_ok "help --options lists the declarations" "exit status $rc" "$declared"
else
  ok "help --options lists the declarations"
fi

# Every command of `sluice --help` but help itself.
commands=$("$sluice" --help | sed -n '/^commands:/,/^$/p' | awk '/^  [a-z]/ && $1 != "help" {print $1}')
for command in $commands; do
  if ! printf '%s\n' "$declared" | grep -q "^$command "; then
    not_ok "$command declares its options" "help --options has no line for it"
    continue
  fi
  help=$("$sluice" "$command" --help 2>&1)
  # Each option its --help lists is declared ("  --name" starts its line).
  listed=$(printf '%s\n' "$help" | grep -oE '^  --[a-z0-9-]+' | sed 's/^  //')
  missing=""
  for option in $listed; do
    printf '%s\n' "$declared" | grep -qE "^$command $option( |\$)" || missing="$missing $option"
  done
  if [ -n "$missing" ]; then
    not_ok "$command --help lists only declared options" "not declared:$missing"
  else
    ok "$command --help lists only declared options"
  fi
done

# Each declared option is in its command's --help and parses: a flag is
# taken and the parser goes on to the next argument, an option with a value
# asks for its value, and neither is called unknown. A number's value just
# past its declared range is refused with that range, and a repeatable
# option given once more than it may be is refused with its count.
while read -r line; do
  times=$(printf '%s' "$line" | grep -oE ' \(up to [0-9]+ times\)$' | grep -oE '[0-9]+')
  line=${line% (up to * times)}
  range=$(printf '%s' "$line" | grep -oE ' \[[^]]*\]$' | sed 's/^ //')
  line=${line% "$range"}
  read -r command option arg <<<"$line"
  what="$command $option"
  help=$("$sluice" "$command" --help 2>&1)
  if ! printf '%s\n' "$help" | grep -qE -- "^  $option( |\$)"; then
    not_ok "$what is in $command --help"
    continue
  fi
  if [ -z "$arg" ]; then
    out=$("$sluice" "$command" "$option" --no-such-option-zz 2>&1)
    rc=$?
    if [ "$rc" -eq 2 ] && ! printf '%s' "$out" | grep -qF "unknown option '$option'" &&
      printf '%s' "$out" | grep -qE -- "--no-such-option-zz|option $option"; then
      ok "$what is in its --help and parses"
    else
      not_ok "$what is in its --help and parses" "exit status $rc" "$out"
    fi
  else
    out=$("$sluice" "$command" "$option" 2>&1)
    rc=$?
    if [ "$rc" -eq 2 ] && printf '%s' "$out" | grep -qF "option $option needs a value"; then
      ok "$what $arg is in its --help and parses"
    else
      not_ok "$what $arg is in its --help and parses" "exit status $rc" "$out"
    fi
  fi
  if [ -n "$times" ]; then
    repeated=()
    for ((k = 0; k <= times; k++)); do repeated+=("$option" "value$k"); done
    out=$("$sluice" "$command" "${repeated[@]}" 2>&1)
    rc=$?
    if [ "$rc" -eq 2 ] && printf '%s' "$out" | grep -qF -- "option $option: at most $times times"; then
      ok "$what refuses a value given $((times + 1)) times"
    else
      not_ok "$what refuses a value given $((times + 1)) times" "exit status $rc" "$out"
    fi
  fi
  if [ -n "$range" ]; then
    low=${range#[}
    low=${low%%,*}
    high=${range#*, }
    high=${high%]}
    case $arg in
      N | N\|auto) past=$((high + 1)) message="$past is out of range; expected $low to $high" ;;
      *) past=$(awk -v h="$high" 'BEGIN { printf "%.0f", h * 2 + 1 }') message="'$past' is not a number in $range" ;;
    esac
    out=$("$sluice" "$command" "$option" "$past" --no-such-option-zz 2>&1)
    rc=$?
    if [ "$rc" -eq 2 ] && printf '%s' "$out" | grep -qF -- "option $option: $message"; then
      ok "$what refuses $past, past its range $range"
    else
      not_ok "$what refuses $past, past its range $range" "exit status $rc" "$out"
    fi
  fi
done <<<"$declared"

# An option no command declares is refused by name, with the nearest
# declared one offered.
expect 2 "unknown option '--repetitons' (did you mean '--repetitions'?)" "a mistyped option gets the declared one" \
  -- bench --repetitons 3
expect 2 "extra" "help --options takes nothing after it" -- help --options extra

echo "1..$n"
[ "$failed" -eq 0 ]
