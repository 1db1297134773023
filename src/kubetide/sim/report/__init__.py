"""What a run leaves behind: summary.json, timeline.csv, events.jsonl (output.py) and report.html
(html.py over figures.py's plotly figures), for one run, a comparison and, through sweep/, a sweep.
Reads a finished run's typed result; imports the runtime only for that result's types."""
