"""The Streamlit app's layer: session state, the labelling flow, the key guard and the pages.
"""
