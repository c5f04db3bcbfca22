#!/bin/sh
#
# readme-config-keys.sh - the key table of README.md's Configuration
# section, in Markdown, from `aptix config --list-keys` (run inside a
# store). t0100-config.sh checks that README.md holds exactly this.
#
#	cd <a store> && sh t/readme-config-keys.sh >table.md

echo '| key | type | default | range | what it sets |'
echo '|---|---|---|---|---|'
aptix config --list-keys | awk -F '\t' '{
	gsub(/\|/, "\\|", $4)
	printf "| `%s` | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5
}'
