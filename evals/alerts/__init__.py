"""The alert router's offline tools: `dgemma alerts eval` scores its decisions on labelled alerts
(`labelled` reads them, `classify` asks the gateway as the router does, `score` counts), `dgemma
alerts report` reads a shadow trial's record (`shadow`); `render` prints and writes both, `plots`
draws them where matplotlib is installed, and `run` is each command's flow.

Not the router's code: the router's image runs them but the router never imports them.
"""
