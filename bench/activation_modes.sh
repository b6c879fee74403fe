# Sourced by the activation benchmarks (bench/activation_memory.sh,
# bench/recompute_time.sh): the `--set` arguments of each activation
# placement, keyed by the name the tables print.
# shellcheck shell=bash disable=SC2034
declare -A SET=(
  [none]="--set train.recompute=none"
  [selective]="--set train.recompute=selective"
  [full]="--set train.recompute=full"
  [offload]="--set train.offload_activations=true"
  [selective_offload]="--set train.recompute=selective --set train.offload_activations=true"
  [gemini_full]="--set train.recompute=full --set plugin.name=gemini --set plugin.offload_optim_frac=1 --set plugin.offload_param_frac=1"
)
