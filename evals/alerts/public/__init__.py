"""What evals/alerts/build_public.py makes a public rule's firing alert from: its Go templates rendered
as Prometheus renders them (`gotemplate`), a value on the firing side of its PromQL threshold and the
labels its selectors fix (`promql`), and the synthetic series labels of where its exporter runs
(`labels`). A builder's code (it makes committed data sets): no command imports it."""
