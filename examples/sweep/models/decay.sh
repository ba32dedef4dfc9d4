# decay RATE STEPS: the amount left after STEPS steps of losing RATE of it each.
awk -v r="$1" -v n="$2" 'BEGIN { x = 1; for (i = 0; i < n; i++) x *= 1 - r; printf "decay rate=%s steps=%s left=%.6f\n", r, n, x }'
