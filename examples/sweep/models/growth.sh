# growth RATE STEPS: the amount after STEPS steps of growing by RATE each.
awk -v r="$1" -v n="$2" 'BEGIN { x = 1; for (i = 0; i < n; i++) x *= 1 + r; printf "growth rate=%s steps=%s left=%.6f\n", r, n, x }'
