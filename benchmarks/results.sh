#!/usr/bin/env bash
# Sourced by the benchmark scripts, from the repository's root, so that each
# script writes its own results file instead of anyone copying its figures
# by hand (benchmarks/README.md lists the files).
#
#   results_begin                              # before the run
#   results_write FILE TITLE COMMAND LOG [MD]  # after it
#
# results_write writes FILE: TITLE, a line naming COMMAND, the start time,
# the commit (with "+changes" when files outside benchmarks/ differ from
# it), the machine and the load average before the run, then LOG (the
# script's printed output; skipped when empty) in a code block, then the
# Markdown file MD as it is (a table the script made), when given.

results_begin() {
	results_load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
	results_start=$(date -u '+%Y-%m-%d %H:%M UTC')
}

results_write() {
	local file=$1 title=$2 command=$3 log=$4 md=${5:-} rev
	rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
	if [ -n "$(git status --porcelain -- . ':!benchmarks' 2>/dev/null)" ]; then
		rev="$rev+changes"
	fi
	{
		echo "# $title"
		echo
		echo "Written by \`$command\`, started $results_start at commit $rev," \
			"on $(nproc) CPUs ($(uname -m), $(go version 2>/dev/null | cut -d' ' -f3));" \
			"load average before the run: $results_load." \
			"The script rewrites this file on every run: do not edit it by hand."
		if [ -n "$log" ] && [ -s "$log" ]; then
			echo
			echo '```'
			cat "$log"
			echo '```'
		fi
		if [ -n "$md" ] && [ -s "$md" ]; then
			echo
			cat "$md"
		fi
	} >"$file"
	echo "wrote $file"
}
