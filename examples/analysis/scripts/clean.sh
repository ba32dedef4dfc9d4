# clean.sh FILE: the data rows of a CSV file, without its header and blank lines.
tail -n +2 "$1" | grep -v '^[[:space:]]*$'
